//! BatchNorm on the SDAA emulator: `native_batch_norm` updates `running_mean`/`running_var` in
//! place although its schema declares no mutation, so the generic CPU fallback used to drop
//! those updates (eval then normalised with the initial statistics). A conv net with
//! BatchNorm2d trained a few SGD steps on sdaa must leave running stats, weights and eval-mode
//! outputs bit-identical to the same run on CPU.

mod common;

use device_sdaa::Device;
use tch::nn::{self, ModuleT, OptimizerConfig};
use tch::{Kind, Tensor};

fn sdaa() -> Device {
    common::use_emulator();
    match Device::open("sdaa:0".parse().unwrap()) {
        Ok(d) => d,
        Err(e) => panic!("opening sdaa on the emulator failed: {e}"),
    }
}

/// Variables (running stats included) after training, sorted by name, plus eval-mode logits.
type Outcome = (Vec<f32>, Vec<(String, Tensor)>, Tensor);

fn train_then_eval(
    device: Option<&Device>,
    init: &nn::VarStore,
    x: &Tensor,
    y: &Tensor,
) -> Outcome {
    let mut vs = nn::VarStore::new(tch::Device::Cpu);
    let model = common::conv_net(&vs.root());
    vs.copy(init).unwrap();
    let mut opt = nn::Sgd {
        momentum: 0.9,
        ..Default::default()
    }
    .build(&vs, 0.05)
    .unwrap();
    let (x, y) = match device {
        Some(dev) => {
            dev.move_var_store(&mut vs).unwrap();
            (dev.to_device(x), dev.to_device(y))
        }
        None => (x.shallow_clone(), y.shallow_clone()),
    };
    let to_cpu = |t: &Tensor| device.map_or(t.shallow_clone(), |dev| dev.to_cpu(t));
    let mut losses = Vec::new();
    for _ in 0..4 {
        let loss = model.forward_t(&x, true).cross_entropy_for_logits(&y);
        opt.backward_step(&loss);
        losses.push(f32::try_from(&to_cpu(&loss)).unwrap());
    }
    let eval = tch::no_grad(|| to_cpu(&model.forward_t(&x, false)));
    let mut vars: Vec<(String, Tensor)> = vs
        .variables()
        .into_iter()
        .map(|(n, v)| (n, to_cpu(&v)))
        .collect();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    (losses, vars, eval)
}

#[test]
fn batchnorm_running_stats_and_eval_equal_cpu_bit_for_bit() {
    let d = sdaa();
    // One draw of inputs and initial weights, copied into both runs (other tests in the process
    // may use the global generator concurrently).
    let x = Tensor::randn([8, 3, 12, 12], (Kind::Float, tch::Device::Cpu)) * 3.0 + 1.5;
    let y = Tensor::from_slice(&[0i64, 1, 2, 3, 4, 5, 6, 7]);
    let init = nn::VarStore::new(tch::Device::Cpu);
    let _ = common::conv_net(&init.root());

    let (cpu_losses, cpu_vars, cpu_eval) = train_then_eval(None, &init, &x, &y);
    let (sdaa_losses, sdaa_vars, sdaa_eval) = train_then_eval(Some(&d), &init, &x, &y);

    assert_eq!(cpu_losses, sdaa_losses, "training losses differ");
    let names: Vec<&str> = cpu_vars.iter().map(|(n, _)| n.as_str()).collect();
    for stat in [
        "bn1.running_mean",
        "bn1.running_var",
        "bn2.running_mean",
        "bn2.running_var",
    ] {
        assert!(names.contains(&stat), "{stat} missing from {names:?}");
    }
    for ((n, a), (m, b)) in cpu_vars.iter().zip(&sdaa_vars) {
        assert_eq!(n, m);
        assert!(
            a.equal(b),
            "{n} differs after training: cpu {a:?} vs sdaa {b:?}"
        );
    }
    // The running stats really moved away from their initial values (0 mean, 1 var), so the
    // equality above is not two untouched buffers agreeing.
    let (_, mean) = &cpu_vars[names.iter().position(|n| *n == "bn1.running_mean").unwrap()];
    assert!(
        !mean.equal(&mean.zeros_like()),
        "bn1.running_mean never updated"
    );
    assert!(cpu_eval.equal(&sdaa_eval), "eval-mode outputs differ");
}

/// `at::batch_norm` directly (train, train, eval) with fp32 and with fp16 input (fp32 running
/// stats, as under autocast): the sdaa running stats are updated in place like the CPU's.
#[test]
fn functional_batch_norm_updates_sdaa_running_stats_in_place() {
    for kind in [Kind::Float, Kind::Half] {
        functional_batch_norm_case(kind);
    }
}

fn functional_batch_norm_case(kind: Kind) {
    let d = sdaa();
    let x =
        (Tensor::randn([6, 5, 4, 4], (Kind::Float, tch::Device::Cpu)) * 2.0 - 0.5).to_kind(kind);
    let run = |device: Option<&Device>| {
        let put = |t: &Tensor| device.map_or(t.shallow_clone(), |dev| dev.to_device(t));
        let to_cpu = |t: &Tensor| device.map_or(t.shallow_clone(), |dev| dev.to_cpu(t));
        let (mean, var) = (
            put(&Tensor::zeros([5], (Kind::Float, tch::Device::Cpu))),
            put(&Tensor::ones([5], (Kind::Float, tch::Device::Cpu))),
        );
        let xs = put(&x);
        let mut outs = Vec::new();
        for training in [true, true, false] {
            let out = Tensor::batch_norm(
                &xs,
                None::<&Tensor>,
                None::<&Tensor>,
                Some(&mean),
                Some(&var),
                training,
                0.1,
                1e-5,
                false,
            );
            outs.push(to_cpu(&out));
        }
        (to_cpu(&mean), to_cpu(&var), outs)
    };
    let (cm, cv, co) = run(None);
    let (sm, sv, so) = run(Some(&d));
    assert!(
        !cm.equal(&cm.zeros_like()),
        "{kind:?}: cpu running mean not updated"
    );
    assert!(
        cm.equal(&sm),
        "{kind:?} running_mean: cpu {cm:?} vs sdaa {sm:?}"
    );
    assert!(
        cv.equal(&sv),
        "{kind:?} running_var: cpu {cv:?} vs sdaa {sv:?}"
    );
    for (i, (a, b)) in co.iter().zip(&so).enumerate() {
        assert!(a.equal(b), "{kind:?} batch_norm output {i} differs");
    }
}

/// The `.out` variant hides the same mutation; its outputs start empty and are resized.
#[test]
fn native_batch_norm_out_updates_sdaa_running_stats() {
    let d = sdaa();
    let x = Tensor::randn([4, 3, 5, 5], (Kind::Float, tch::Device::Cpu)) + 0.7;
    let run = |device: Option<&Device>| {
        let put = |t: &Tensor| device.map_or(t.shallow_clone(), |dev| dev.to_device(t));
        let to_cpu = |t: &Tensor| device.map_or(t.shallow_clone(), |dev| dev.to_cpu(t));
        let cpu = (Kind::Float, tch::Device::Cpu);
        let (mean, var) = (put(&Tensor::zeros([3], cpu)), put(&Tensor::ones([3], cpu)));
        let empty = || put(&Tensor::empty([0], cpu));
        let (out, save_mean, save_invstd) = (empty(), empty(), empty());
        let _ = put(&x).native_batch_norm_out(
            &out,
            &save_mean,
            &save_invstd,
            None::<&Tensor>,
            None::<&Tensor>,
            Some(&mean),
            Some(&var),
            true,
            0.1,
            1e-5,
        );
        [mean, var, out, save_mean, save_invstd].map(|t| to_cpu(&t))
    };
    let cpu = run(None);
    let dev = run(Some(&d));
    assert_eq!(cpu[2].size(), vec![4, 3, 5, 5]);
    assert!(
        !cpu[0].equal(&cpu[0].zeros_like()),
        "cpu running mean not updated"
    );
    for (i, name) in [
        "running_mean",
        "running_var",
        "out",
        "save_mean",
        "save_invstd",
    ]
    .iter()
    .enumerate()
    {
        assert!(
            cpu[i].equal(&dev[i]),
            "{name}: cpu {:?} vs sdaa {:?}",
            cpu[i],
            dev[i]
        );
    }
}
