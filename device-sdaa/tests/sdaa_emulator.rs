//! `--device sdaa` end to end through the SDAA emulator (built by `make build`): the libraries
//! and plugin load, tensors and var stores move, a conv net's forward + backward on sdaa equals
//! the CPU's bit for bit, autocast works on the sdaa device type, memory is accounted.

mod common;

use device_sdaa::{Device, DeviceKind, DeviceSpec};
use tch::nn::{self, Module, ModuleT};
use tch::{Kind, Tensor};

/// The emulated device's memory counters are process-wide: the tests that read them would
/// see the allocations of tests running beside them, so every test here holds this.
static DEVICE_MEMORY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    DEVICE_MEMORY.lock().unwrap_or_else(|e| e.into_inner())
}

fn sdaa() -> Device {
    common::use_emulator();
    match Device::open("sdaa:0".parse().unwrap()) {
        Ok(d) => d,
        Err(e) => panic!("opening sdaa on the emulator failed: {e}"),
    }
}

fn net(vs: &nn::Path) -> nn::Sequential {
    nn::seq()
        .add(nn::conv2d(
            vs / "c1",
            3,
            8,
            3,
            nn::ConvConfig {
                padding: 1,
                ..Default::default()
            },
        ))
        .add_fn(|x| x.relu())
        .add(nn::conv2d(
            vs / "c2",
            8,
            4,
            3,
            nn::ConvConfig {
                stride: 2,
                ..Default::default()
            },
        ))
        .add_fn(|x| x.relu().flatten(1, -1))
        .add(nn::linear(vs / "fc", 4 * 7 * 7, 10, Default::default()))
}

#[test]
fn opens_with_name_count_backend() {
    let _serial = serial();
    let d = sdaa();
    assert_eq!(d.kind(), DeviceKind::Sdaa);
    assert_eq!(d.name(), "SDAA emulator device 0");
    assert_eq!(d.process_group_backend(), "tccl");
    assert_eq!(d.autocast_device_type(), "sdaa");
    assert_eq!(d.default_amp_dtype(), Kind::Half);
    assert_eq!(Device::device_count(DeviceKind::Sdaa), 2);
    // sdaa:5 does not exist on the default 2-device emulator.
    let e = Device::open(DeviceSpec {
        kind: DeviceKind::Sdaa,
        index: Some(5),
    })
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("sdaa:5 requested but this machine has 2 sdaa devices"),
        "{e}"
    );
}

#[test]
fn tensors_round_trip_and_memory_is_accounted() {
    let _serial = serial();
    let d = sdaa();
    let before = d.memory_info().expect("sdaa reports memory");
    let x = Tensor::arange(1_000_000, (Kind::Float, tch::Device::Cpu));
    let on = d.to_device(&x);
    assert!(d.holds(&on));
    assert!(!d.holds(&x));
    let during = d.memory_info().unwrap();
    assert_eq!(during.total, before.total);
    assert!(
        before.free - during.free >= 4_000_000,
        "{before:?} -> {during:?}"
    );
    let back = d.to_cpu(&(&on * 2.0));
    assert!(back.equal(&(&x * 2.0)));
    drop(on);
    d.synchronize();
}

#[test]
fn conv_net_forward_backward_equals_cpu_bit_for_bit() {
    let _serial = serial();
    let d = sdaa();
    // Other tests draw from the global generator concurrently: take inputs and initial weights
    // from one draw and copy them, rather than relying on re-seeding.
    let input = Tensor::randn([4, 3, 16, 16], (Kind::Float, tch::Device::Cpu));
    let target = Tensor::from_slice(&[1i64, 3, 5, 7]);
    let init = nn::VarStore::new(tch::Device::Cpu);
    let _ = net(&init.root());

    let run = |device: Option<&Device>| {
        let mut vs = nn::VarStore::new(tch::Device::Cpu);
        let model = net(&vs.root());
        vs.copy(&init).unwrap();
        let (x, y) = match device {
            Some(dev) => {
                dev.move_var_store(&mut vs).unwrap();
                (dev.to_device(&input), dev.to_device(&target))
            }
            None => (input.shallow_clone(), target.shallow_clone()),
        };
        let logits = model.forward_t(&x, true);
        let loss = logits.cross_entropy_for_logits(&y);
        loss.backward();
        let to_cpu = |t: &Tensor| device.map_or(t.shallow_clone(), |dev| dev.to_cpu(t));
        let mut grads: Vec<(String, Tensor)> = vs
            .variables()
            .into_iter()
            .map(|(name, v)| {
                if let Some(dev) = device {
                    assert!(dev.holds(&v), "{name} not on sdaa");
                    assert!(v.requires_grad(), "{name} lost requires_grad");
                }
                (name, to_cpu(&v.grad()))
            })
            .collect();
        grads.sort_by(|a, b| a.0.cmp(&b.0));
        (to_cpu(&logits), to_cpu(&loss), grads)
    };
    let (cpu_logits, cpu_loss, cpu_grads) = run(None);
    let (sdaa_logits, sdaa_loss, sdaa_grads) = run(Some(&d));
    assert!(cpu_logits.equal(&sdaa_logits), "logits differ");
    assert!(cpu_loss.equal(&sdaa_loss), "loss differs");
    assert_eq!(cpu_grads.len(), 6);
    for ((n1, g1), (n2, g2)) in cpu_grads.iter().zip(&sdaa_grads) {
        assert_eq!(n1, n2);
        assert!(g1.equal(g2), "gradient of {n1} differs");
    }
}

#[test]
fn autocast_on_sdaa_runs_convs_in_half_and_restores_state() {
    let _serial = serial();
    let d = sdaa();
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let conv = nn::conv2d(vs.root() / "c", 3, 4, 3, Default::default());
    let mut vs = vs;
    d.move_var_store(&mut vs).unwrap();
    let x = d.to_device(&Tensor::randn(
        [2, 3, 8, 8],
        (Kind::Float, tch::Device::Cpu),
    ));
    assert!(!d.autocast_enabled());
    let y = d.autocast(true, Kind::Half, || {
        assert!(d.autocast_enabled());
        conv.forward(&x)
    });
    assert!(!d.autocast_enabled(), "autocast state not restored");
    assert_eq!(y.kind(), Kind::Half);
    assert_eq!(conv.forward(&x).kind(), Kind::Float);
}

#[test]
fn sgd_training_steps_on_sdaa_equal_cpu_bit_for_bit() {
    let _serial = serial();
    use tch::nn::OptimizerConfig;
    let d = sdaa();
    let input = Tensor::randn([8, 3, 16, 16], (Kind::Float, tch::Device::Cpu));
    let target = Tensor::from_slice(&[0i64, 1, 2, 3, 4, 5, 6, 7]);
    let init = nn::VarStore::new(tch::Device::Cpu);
    let _ = net(&init.root());

    let train = |device: Option<&Device>| {
        let mut vs = nn::VarStore::new(tch::Device::Cpu);
        let model = net(&vs.root());
        vs.copy(&init).unwrap();
        // The optimizer is built before the move: it must follow the variables.
        let mut opt = nn::Sgd {
            momentum: 0.9,
            ..Default::default()
        }
        .build(&vs, 0.05)
        .unwrap();
        let (x, y) = match device {
            Some(dev) => {
                dev.move_var_store(&mut vs).unwrap();
                (dev.to_device(&input), dev.to_device(&target))
            }
            None => (input.shallow_clone(), target.shallow_clone()),
        };
        let mut losses = Vec::new();
        for _ in 0..3 {
            let loss = model.forward_t(&x, true).cross_entropy_for_logits(&y);
            opt.backward_step(&loss);
            losses.push(f32::try_from(&loss.to_device(tch::Device::Cpu)).unwrap());
        }
        let mut weights: Vec<(String, Tensor)> = vs
            .variables()
            .into_iter()
            .map(|(n, v)| (n, v.to_device(tch::Device::Cpu)))
            .collect();
        weights.sort_by(|a, b| a.0.cmp(&b.0));
        (losses, weights)
    };
    let (cpu_losses, cpu_w) = train(None);
    let (sdaa_losses, sdaa_w) = train(Some(&d));
    assert_eq!(cpu_losses, sdaa_losses);
    assert!(
        cpu_losses[2] < cpu_losses[0],
        "training did not reduce the loss: {cpu_losses:?}"
    );
    for ((n, a), (_, b)) in cpu_w.iter().zip(&sdaa_w) {
        assert!(a.equal(b), "weights of {n} differ after 3 steps");
    }
}

/// Ops with no sdaa kernel run their CPU kernel on the device memory itself (no copies in or
/// out): in-place ops keep the tensor's memory, out= ops may resize `out`, views share the
/// base's memory, and fresh outputs are counted as device memory.
#[test]
fn ops_without_a_kernel_run_in_place_on_device_memory() {
    let _serial = serial();
    let d = sdaa();
    let x = Tensor::arange(24, (Kind::Float, tch::Device::Cpu)).reshape([4, 6]);
    let on = d.to_device(&x);

    // In place: same memory, new values.
    let before = on.data_ptr();
    let mut inplace = on.copy();
    let ptr = inplace.data_ptr();
    let _ = inplace.g_add_scalar_(1.5);
    assert_eq!(inplace.data_ptr(), ptr, "add_ moved the tensor");
    assert!(d.to_cpu(&inplace).equal(&(&x + 1.5)));
    assert_eq!(on.data_ptr(), before);

    // out= with an output of the wrong size: resized on the device, right values.
    let b = Tensor::arange(18, (Kind::Float, tch::Device::Cpu)).reshape([6, 3]);
    let out = d.to_device(&Tensor::zeros([1], (Kind::Float, tch::Device::Cpu)));
    let got = on.mm_out(&out, &d.to_device(&b));
    assert!(d.holds(&out) && d.holds(&got));
    assert_eq!(out.size(), [4, 3]);
    assert!(d.to_cpu(&out).equal(&x.mm(&b)));

    // A view computed by the fallback (unfold has no sdaa kernel) aliases the base.
    let view = on.unfold(1, 2, 2);
    assert!(d.holds(&view));
    assert_eq!(view.data_ptr(), on.data_ptr());
    assert!(d.to_cpu(&view).equal(&x.unfold(1, 2, 2)));

    // A fresh output (a convolution's) is device memory until dropped.
    let free = || d.memory_info().unwrap().free;
    let img = d.to_device(&Tensor::ones(
        [1, 1, 256, 256],
        (Kind::Float, tch::Device::Cpu),
    ));
    let w = d.to_device(&Tensor::ones([4, 1, 1, 1], (Kind::Float, tch::Device::Cpu)));
    let idle = free();
    let y = img.conv2d(&w, None::<&Tensor>, [1, 1], [0, 0], [1, 1], 1);
    assert!(d.holds(&y));
    assert!(
        idle - free() >= 4 * 256 * 256 * 4,
        "conv output not counted: {idle} -> {}",
        free()
    );
    drop(y);
    assert_eq!(free(), idle);
}
