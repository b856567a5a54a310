//! Training in channels-last on the CPU, the ResNet's batch norms run fused with their ReLU
//! (and residual add): the loss, every gradient and the running statistics of a step are as
//! close to an fp64 reference step (the same weights) as those of the separate ops are — basic
//! blocks (resnet18) and bottlenecks (resnet50) in fp32, resnet18 in bf16 autocast.
//!
//! The comparison is against fp64, not fused against separate ops: a randomly initialised
//! network amplifies rounding (bf16 logits are ~15% off fp32 either way), so the question a
//! test can settle is whether fusing loses accuracy, not whether two roundings agree. (bf16
//! resnet50 is left out: at this size both its gradient sets are over 100% off fp64, noise that
//! no ratio can judge; the op's own bf16 arithmetic is held in device-sdaa's tests/fused_bn.rs.)
//! And run_resnet's module fuses exactly when it trains in nhwc.

use device_sdaa::{fused, Device, DeviceSpec};
use modelzoo_engine::BasicModule;
use modelzoo_resnet::module::{to_channels_last, Hyper, ResNetModule};
use modelzoo_resnet::{ResNet, Variant};
use modelzoo_vision::ImageBatch;
use tch::nn::{self, ModuleT};
use tch::{Kind, Reduction, Tensor};

/// Three copies of one network, channels-last: fused, separate ops, and fp64.
fn triplets(variant: Variant) -> [(nn::VarStore, ResNet); 3] {
    tch::manual_seed(7);
    let build = || {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = ResNet::new(&vs.root(), variant, 10);
        tch::no_grad(|| {
            for (_, mut t) in vs.variables() {
                if t.dim() == 4 {
                    t.set_data(&to_channels_last(&t));
                }
            }
        });
        (vs, net)
    };
    let (mut a, mut b, mut c) = (build(), build(), build());
    b.0.copy(&a.0).unwrap();
    c.0.copy(&a.0).unwrap();
    a.1.set_fused_bn_relu(true);
    c.0.double();
    [a, b, c]
}

/// Loss, then every variable (gradients of the trainable ones, running statistics) in name
/// order, after one training step's forward and backward.
fn step(vs: &nn::VarStore, net: &ResNet, kind: Kind, amp: bool) -> (f64, Vec<Tensor>) {
    let n = 8 * 3 * 64 * 64;
    // Noise-like pixels (the same in every precision: made in fp64, then cast). Smooth inputs
    // leave channels nearly constant, whose normalisation (÷ √(var + ε)) amplifies rounding.
    let noise =
        ((Tensor::arange(n, (Kind::Double, tch::Device::Cpu)) * 12.9898).sin() * 43758.5453).frac()
            - 0.5;
    let x = to_channels_last(&noise.reshape([8, 3, 64, 64]).to_kind(kind));
    let labels = Tensor::from_slice(&[1i64, 7, 3, 9, 0, 2, 5, 8]);
    let device = Device::open(DeviceSpec::CPU).unwrap();
    let logits = device.autocast(amp, Kind::BFloat16, || {
        net.forward_t(&x, true).to_kind(kind)
    });
    let loss = logits.cross_entropy_loss::<Tensor>(&labels, None, Reduction::Mean, -100, 0.0);
    loss.backward();
    let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    let values = vars
        .into_iter()
        .map(|(_, t)| {
            let v = if t.requires_grad() {
                t.grad()
            } else {
                t.detach()
            };
            v.to_kind(Kind::Double)
        })
        .collect();
    (loss.double_value(&[]), values)
}

/// ‖got − want‖ / ‖want‖ over all tensors together.
fn relative_error(got: &[Tensor], want: &[Tensor]) -> f64 {
    let (mut diff, mut norm) = (0.0, 0.0);
    for (g, w) in got.iter().zip(want) {
        diff += (g - w).square().sum(Kind::Double).double_value(&[]);
        norm += w.square().sum(Kind::Double).double_value(&[]);
    }
    (diff / norm).sqrt()
}

fn compare(variant: Variant, amp: bool) {
    let [(vs_f, net_f), (vs_s, net_s), (vs_r, net_r)] = triplets(variant);
    let kind = Kind::Float;
    let before = fused::ops_run();
    let (loss_f, vars_f) = step(&vs_f, &net_f, kind, amp);
    assert!(
        fused::ops_run() > before,
        "{variant}: the fused op did not run"
    );
    let (loss_s, vars_s) = step(&vs_s, &net_s, kind, amp);
    let (loss_r, vars_r) = step(&vs_r, &net_r, Kind::Double, false);
    let label = format!("{variant} {}", if amp { "bf16" } else { "fp32" });
    // Fused may be up to 1.5× the separate ops' error, or within a floor: fp32 1e-5; bf16 1e-2,
    // a few of its 2⁻⁸ roundings (one scalar's error is as likely 0.4× as 2× the other's).
    let floor = if amp { 1e-2 } else { 1e-5 };
    let (loss_err_f, loss_err_s) = ((loss_f - loss_r).abs(), (loss_s - loss_r).abs());
    assert!(
        loss_err_f <= (1.5 * loss_err_s).max(floor * loss_r.abs()),
        "{label}: loss {loss_f} fused, {loss_s} separate, {loss_r} fp64"
    );
    let (err_f, err_s) = (
        relative_error(&vars_f, &vars_r),
        relative_error(&vars_s, &vars_r),
    );
    assert!(
        err_f <= (1.5 * err_s).max(floor),
        "{label}: gradients and statistics {err_f:e} from fp64 fused, {err_s:e} separate"
    );
}

/// One test: the weights come from the global generator, seeded, which tests running in
/// parallel would share.
#[test]
fn fused_step_is_as_accurate_as_separate_ops() {
    compare(Variant::ResNet18, false);
    compare(Variant::ResNet50, false);
    compare(Variant::ResNet18, true);
    // run_resnet's module fuses when it trains in nhwc, and only then.
    for channels_last in [true, false] {
        let hyper = Hyper {
            lr: 0.1,
            momentum: 0.9,
            nesterov: false,
            weight_decay: 0.0,
            label_smoothing: 0.0,
            warmup_epochs: 0.0,
            clip_grad_norm: None,
            channels_last,
        };
        let mut module = ResNetModule::new(Variant::ResNet18, 10, hyper, 1);
        let batch = ImageBatch {
            images: Tensor::zeros([2, 3, 32, 32], (Kind::Float, tch::Device::Cpu)),
            labels: Tensor::from_slice(&[0i64, 1]),
        };
        let batch = module.pretreating_batch(batch, &tch::Device::Cpu);
        let before = fused::ops_run();
        let _ = module.training_step(&batch);
        let ran = fused::ops_run() - before;
        assert_eq!(
            ran > 0,
            channels_last,
            "nhwc {channels_last}: {ran} fused ops"
        );
    }
}
