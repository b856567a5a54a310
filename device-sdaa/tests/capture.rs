//! The dispatcher capture on the CPU: outermost aten ops only, forward then backward, call
//! indices per op, module scopes (backward ops inherit their forward op's), other threads not
//! captured, nothing captured once stopped.

use device_sdaa::capture::{self, Capture, Captured, Sink};
use tch::{Kind, Tensor};

#[derive(Debug, Clone, PartialEq)]
struct Seen {
    op: String,
    call: u64,
    backward: bool,
    output: bool,
    index: u32,
    scope: String,
    dtype: String,
    bytes: usize,
}

/// One capture per process: the tests take turns.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[derive(Default)]
struct Collect(Vec<Seen>);

impl Sink for Collect {
    fn record(&mut self, t: &Captured<'_>) {
        self.0.push(Seen {
            op: t.op.to_string(),
            call: t.call,
            backward: t.backward,
            output: t.output,
            index: t.index,
            scope: t.scope.to_string(),
            dtype: t.dtype.to_string(),
            bytes: t.data.len(),
        });
    }
}

fn outputs<'a>(seen: &'a [Seen], op: &str) -> Vec<&'a Seen> {
    seen.iter()
        .filter(|s| s.op == op && s.output && s.index == 0)
        .collect()
}

#[test]
fn a_conv_step_is_captured_at_the_outermost_op_with_scopes_and_phases() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    tch::manual_seed(0);
    let x = Tensor::randn([2, 3, 8, 8], (Kind::Float, tch::Device::Cpu));
    let w = Tensor::randn([4, 3, 3, 3], (Kind::Float, tch::Device::Cpu)).set_requires_grad(true);
    let cap = Capture::start(Collect::default(), true, false, false).unwrap();
    let y = {
        let _s = capture::scope("block.conv");
        x.conv2d::<Tensor>(&w, None, [1, 1], [1, 1], [1, 1], 1)
    };
    let loss = {
        let _s = capture::scope("head");
        y.relu().sum(Kind::Float)
    };
    // A thread that did not inherit the capture (like the data loader's) is not seen.
    let _ = std::thread::spawn(|| Tensor::ones([3], (Kind::Float, tch::Device::Cpu)).exp())
        .join()
        .unwrap();
    loss.backward();
    let seen = cap.finish().unwrap().0;
    // Nothing after the capture stopped.
    let _ = Tensor::ones([2], (Kind::Float, tch::Device::Cpu)).sin();

    let ops: Vec<&str> = seen.iter().map(|s| s.op.as_str()).collect();
    for inner in [
        "aten::_convolution",
        "aten::convolution",
        "aten::mkldnn_convolution",
    ] {
        assert!(!ops.contains(&inner), "nested {inner} recorded: {ops:?}");
    }
    assert!(!ops.contains(&"aten::exp"), "another thread's op recorded");
    assert!(!ops.contains(&"aten::sin"), "recorded after stop");

    let conv = outputs(&seen, "aten::conv2d");
    assert_eq!(conv.len(), 1, "{seen:#?}");
    assert_eq!((conv[0].call, conv[0].backward), (0, false));
    assert_eq!(conv[0].scope, "block.conv");
    assert_eq!(
        (conv[0].dtype.as_str(), conv[0].bytes),
        ("float32", 2 * 4 * 8 * 8 * 4)
    );
    let conv_inputs = seen
        .iter()
        .filter(|s| s.op == "aten::conv2d" && !s.output)
        .count();
    assert_eq!(conv_inputs, 2, "x and w (no bias): {seen:#?}");
    assert_eq!(outputs(&seen, "aten::relu")[0].scope, "head");

    let back = outputs(&seen, "aten::convolution_backward");
    assert_eq!(back.len(), 1, "{seen:#?}");
    assert!(back[0].backward);
    assert_eq!(
        back[0].scope, "block.conv",
        "backward inherits the forward scope"
    );
    let relu_back = outputs(&seen, "aten::threshold_backward");
    assert_eq!(relu_back.len(), 1, "{seen:#?}");
    assert_eq!(relu_back[0].scope, "head");
    // Forward records come before every backward one.
    let first_back = seen.iter().position(|s| s.backward).unwrap();
    assert!(seen[first_back..]
        .iter()
        .all(|s| s.backward || s.op == "aten::ones_like"));
}

#[test]
fn scope_guards_cost_nothing_without_a_capture() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let start = std::time::Instant::now();
    for _ in 0..100_000 {
        let _s = capture::scope("layer1.0.conv1");
    }
    assert!(start.elapsed() < std::time::Duration::from_millis(50));
}

#[test]
fn call_indices_count_each_op_from_zero() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let a = Tensor::ones([4], (Kind::Float, tch::Device::Cpu));
    let cap = Capture::start(Collect::default(), true, false, false).unwrap();
    let b = a.exp();
    let c = b.exp();
    let _d = c.sin();
    let seen = cap.finish().unwrap().0;
    let calls: Vec<(String, u64)> = seen
        .iter()
        .filter(|s| s.output)
        .map(|s| (s.op.clone(), s.call))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("aten::exp".to_string(), 0),
            ("aten::exp".to_string(), 1),
            ("aten::sin".to_string(), 0)
        ]
    );
}

#[test]
fn a_tensor_handed_over_again_unchanged_comes_as_a_repeat() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    #[derive(Default)]
    struct Ids(Vec<(String, bool, Option<u64>, bool, usize)>);
    impl Sink for Ids {
        fn record(&mut self, t: &Captured<'_>) {
            self.0.push((
                t.op.to_string(),
                t.output,
                t.tensor_id,
                t.repeat,
                t.data.len(),
            ));
        }
    }
    let a = Tensor::ones([8], (Kind::Float, tch::Device::Cpu));
    let cap = Capture::start(Ids::default(), true, false, true).unwrap();
    let b = a.exp();
    let _c = b.sin();
    let mut d = b.shallow_clone();
    let _ = d.g_add_scalar_(1.0);
    let _e = d.cos();
    let seen = cap.finish().unwrap().0;
    let exp_out = seen.iter().find(|s| s.0 == "aten::exp" && s.1).unwrap();
    let sin_in = seen.iter().find(|s| s.0 == "aten::sin" && !s.1).unwrap();
    assert_eq!((exp_out.3, exp_out.4), (false, 32));
    assert_eq!(sin_in.2, exp_out.2, "the same tensor, the same id");
    assert_eq!(
        (sin_in.3, sin_in.4),
        (true, 0),
        "a repeat comes without data"
    );
    // add_ changed it in place: its output is a new version, which cos then repeats.
    let add_in = seen.iter().find(|s| s.0 == "aten::add_" && !s.1).unwrap();
    let add_out = seen.iter().find(|s| s.0 == "aten::add_" && s.1).unwrap();
    let cos_in = seen.iter().find(|s| s.0 == "aten::cos" && !s.1).unwrap();
    assert_eq!((add_in.2, add_in.3), (exp_out.2, true));
    assert_eq!((add_out.3, add_out.4), (false, 32));
    assert_ne!(add_out.2, exp_out.2);
    assert_eq!((cos_in.2, cos_in.3), (add_out.2, true));
}
