//! Autocast on the SDAA emulator's PrivateUse1 device. The plugin registers libtorch 2.11's
//! CUDA cast policies for `AutocastPrivateUse1` and lets every other op fall through; before
//! the fallthrough, `aten::batch_norm` under autocast on sdaa failed with "Could not run
//! 'aten::batch_norm' with arguments from the 'Autocastsdaa' backend".
//!
//! Checked here: the dtype each op class gets (as CUDA: convs/matmuls fp16, softmax/losses/norms
//! fp32, ops in no list keep their input dtype), the banned binary_cross_entropy, the tensor-core
//! numerics of fp16/bf16 GEMMs and convolutions (bit for bit the fp32 CPU kernel on the widened
//! operands, rounded back), and a conv+BN net under autocast on sdaa close to the same net under
//! autocast(fp16) on CPU (whose fp16 kernels round differently).

mod common;

use device_sdaa::Device;
use tch::nn::{self, ModuleT};
use tch::{Kind, Reduction, Tensor};

fn sdaa() -> Device {
    common::use_emulator();
    match Device::open("sdaa:0".parse().unwrap()) {
        Ok(d) => d,
        Err(e) => panic!("opening sdaa on the emulator failed: {e}"),
    }
}

fn randn(shape: &[i64]) -> Tensor {
    Tensor::randn(shape, (Kind::Float, tch::Device::Cpu))
}

#[test]
fn op_classes_get_cudas_dtypes_under_autocast_on_sdaa() {
    let d = sdaa();
    let put = |t: &Tensor| d.to_device(t);
    let x = put(&randn(&[2, 3, 6, 6]));
    let w = put(&randn(&[4, 3, 3, 3]));
    let a = put(&randn(&[5, 7]));
    let b = put(&randn(&[7, 3]));
    let lw = put(&randn(&[3, 7]));
    let target = put(&Tensor::from_slice(&[0i64, 1, 2, 1, 0]));

    // Outside autocast nothing is cast.
    assert_eq!(
        x.conv2d(&w, None::<Tensor>, [1], [1], [1], 1).kind(),
        Kind::Float
    );

    d.autocast(true, Kind::Half, || {
        assert!(d.autocast_enabled());
        // lower_precision_fp list: fp32 inputs run in fp16.
        let conv = x.conv2d(&w, None::<Tensor>, [1], [1], [1], 1);
        assert_eq!(conv.kind(), Kind::Half, "conv2d");
        assert_eq!(a.matmul(&b).kind(), Kind::Half, "matmul");
        assert_eq!(a.mm(&b).kind(), Kind::Half, "mm");
        let lin = a.linear(&lw, None::<Tensor>);
        assert_eq!(lin.kind(), Kind::Half, "linear");

        // In no list (falls through, as on CUDA): the fp16 conv output stays fp16 through
        // batch_norm with fp32 weight/stats, relu and max_pool2d.
        let (mean, var) = (
            put(&Tensor::zeros([4], (Kind::Float, tch::Device::Cpu))),
            put(&Tensor::ones([4], (Kind::Float, tch::Device::Cpu))),
        );
        let bn = conv.batch_norm(
            None::<&Tensor>,
            None::<&Tensor>,
            Some(&mean),
            Some(&var),
            true,
            0.1,
            1e-5,
            false,
        );
        assert_eq!(bn.kind(), Kind::Half, "batch_norm keeps its input dtype");
        assert_eq!(mean.kind(), Kind::Float, "running stats stay fp32");
        let pooled = bn.relu().max_pool2d([2, 2], [2, 2], [0, 0], [1, 1], false);
        assert_eq!(pooled.kind(), Kind::Half, "relu/max_pool2d");
        // And fp32 input stays fp32 through a fallthrough op.
        assert_eq!(a.relu().kind(), Kind::Float, "relu on fp32");

        // fp32 / fp32_set_opt_dtype lists: fp16 inputs are computed in fp32.
        assert_eq!(lin.softmax(-1, None::<Kind>).kind(), Kind::Float, "softmax");
        let logp = lin.log_softmax(-1, None::<Kind>);
        assert_eq!(logp.kind(), Kind::Float, "log_softmax");
        assert_eq!(lin.exp().kind(), Kind::Float, "exp");
        assert_eq!(lin.sum(None::<Kind>).kind(), Kind::Float, "sum");
        let lin16 = lin.shallow_clone();
        assert_eq!(lin16.nll_loss(&target).kind(), Kind::Float, "nll_loss");
        assert_eq!(
            lin16.mse_loss(&lin16.zeros_like(), Reduction::Mean).kind(),
            Kind::Float,
            "mse_loss"
        );
        let ln = lin16.layer_norm([3], None::<Tensor>, None::<Tensor>, 1e-5, false);
        assert_eq!(ln.kind(), Kind::Float, "layer_norm");
        // fp32_append_dtype (norm.Scalar).
        assert_eq!(lin16.norm().kind(), Kind::Float, "norm");
        // promote: mixed fp16/fp32 inputs run in the widest type.
        assert_eq!(
            lin16.addcmul(&lin16, &lin16.to_kind(Kind::Float)).kind(),
            Kind::Float
        );

        // binary_cross_entropy is banned under autocast, as on CUDA, with CUDA's message.
        let p = lin16.sigmoid();
        let err = p
            .f_binary_cross_entropy(&p.zeros_like(), None::<Tensor>, Reduction::Mean)
            .expect_err("binary_cross_entropy must be refused under autocast");
        assert!(
            err.to_string().contains("unsafe to autocast"),
            "unexpected error: {err}"
        );
    });
    assert!(!d.autocast_enabled(), "autocast left on after the closure");
}

/// Logits, loss and every variable's gradient (sorted by name) after one forward + backward
/// under autocast(fp16) on `device`, all copied to the host.
type Outcome = (Tensor, Tensor, Vec<(String, Tensor)>);

fn forward_backward(device: &Device, init: &nn::VarStore, x: &Tensor, y: &Tensor) -> Outcome {
    let mut vs = nn::VarStore::new(tch::Device::Cpu);
    let model = common::conv_net(&vs.root());
    vs.copy(init).unwrap();
    device.move_var_store(&mut vs).unwrap();
    let (x, y) = (device.to_device(x), device.to_device(y));
    let (logits, loss) = device.autocast(true, Kind::Half, || {
        let logits = model.forward_t(&x, true);
        // Cast before the loss, as a mixed-precision training loop does: CPU and CUDA autocast
        // put different loss-internal ops (log_softmax) on their fp32 lists.
        let loss = logits.to_kind(Kind::Float).cross_entropy_for_logits(&y);
        (logits, loss)
    });
    loss.backward();
    let mut named: Vec<(String, Tensor)> = vs
        .variables()
        .into_iter()
        .filter(|(_, v)| v.requires_grad())
        .map(|(n, v)| (n, device.to_cpu(&v.grad())))
        .collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    (device.to_cpu(&logits), device.to_cpu(&loss), named)
}

/// `a` and `b` hold the same values, within `rtol` of the largest magnitude in `a`.
fn assert_close(a: &Tensor, b: &Tensor, rtol: f64, what: &str) {
    let (a, b) = (a.to_kind(Kind::Double), b.to_kind(Kind::Double));
    let scale = f64::try_from(a.abs().max()).unwrap().max(1e-6);
    let diff = f64::try_from((&a - &b).abs().max()).unwrap();
    assert!(
        diff <= rtol * scale,
        "{what}: max |diff| {diff:e} > {rtol} x max |value| {scale:e}"
    );
}

#[test]
fn conv_bn_net_under_autocast_on_sdaa_is_close_to_cpu_autocast() {
    let d = sdaa();
    let cpu = Device::cpu();
    let x = randn(&[8, 3, 12, 12]) * 3.0 + 1.5;
    let y = Tensor::from_slice(&[0i64, 1, 2, 3, 4, 5, 6, 7]);
    let init = nn::VarStore::new(tch::Device::Cpu);
    let _ = common::conv_net(&init.root());

    let (cpu_logits, cpu_loss, cpu_grads) = forward_backward(&cpu, &init, &x, &y);
    let (sdaa_logits, sdaa_loss, sdaa_grads) = forward_backward(&d, &init, &x, &y);

    // The net really ran in fp16 on both.
    assert_eq!(sdaa_logits.kind(), Kind::Half);
    assert_eq!(cpu_logits.kind(), Kind::Half);
    // fp16 keeps 11 significant bits (2^-11 = 4.9e-4 relative); two convs, two BNs and a
    // linear layer of rounding differences stay within 1% of the largest value.
    assert_close(&cpu_logits, &sdaa_logits, 1e-2, "logits");
    let loss = f32::try_from(&sdaa_loss).unwrap();
    assert!(loss.is_finite(), "loss {loss}");
    assert_close(&cpu_loss, &sdaa_loss, 1e-2, "loss");

    assert_eq!(
        sdaa_grads.len(),
        8,
        "2 conv weights, 2 x bn weight+bias, fc weight+bias"
    );
    for ((n, a), (m, b)) in cpu_grads.iter().zip(&sdaa_grads) {
        assert_eq!(n, m);
        assert_eq!(
            b.kind(),
            Kind::Float,
            "{n}: fp32 master weights get fp32 grads"
        );
        assert!(
            f64::try_from(b.abs().sum(Kind::Double)).unwrap() > 0.0,
            "{n}: zero gradient"
        );
        assert_close(a, b, 2e-2, n);
    }
}

/// What a tensor core returns for `op` on low-precision operands: the fp32 op on the operands
/// widened (exactly) to fp32, the result rounded back to `kind` — computed on the CPU.
fn tensor_core(kind: Kind, operands: &[&Tensor], op: impl Fn(&[Tensor]) -> Tensor) -> Tensor {
    let wide: Vec<Tensor> = operands.iter().map(|t| t.to_kind(Kind::Float)).collect();
    op(&wide).to_kind(kind)
}

#[test]
fn low_precision_gemms_and_convolutions_compute_as_tensor_cores_do() {
    let d = sdaa();
    for kind in [Kind::Half, Kind::BFloat16] {
        let low = |shape: &[i64]| randn(shape).to_kind(kind);
        let on = |t: &Tensor| d.to_device(t);
        let (a, b, c) = (low(&[33, 70]), low(&[70, 17]), low(&[33, 17]));
        let (p, q, r) = (low(&[4, 9, 70]), low(&[4, 70, 5]), low(&[4, 9, 5]));
        let cases: Vec<(&str, Tensor, Tensor)> = vec![
            (
                "mm",
                d.to_cpu(&on(&a).mm(&on(&b))),
                tensor_core(kind, &[&a, &b], |t| t[0].mm(&t[1])),
            ),
            (
                "addmm",
                d.to_cpu(&on(&c).addmm(&on(&a), &on(&b))),
                tensor_core(kind, &[&c, &a, &b], |t| t[0].addmm(&t[1], &t[2])),
            ),
            (
                "bmm",
                d.to_cpu(&on(&p).bmm(&on(&q))),
                tensor_core(kind, &[&p, &q], |t| t[0].bmm(&t[1])),
            ),
            (
                "baddbmm",
                d.to_cpu(&on(&r).baddbmm(&on(&p), &on(&q), 1.0, 1.0)),
                tensor_core(kind, &[&r, &p, &q], |t| {
                    t[0].baddbmm(&t[1], &t[2], 1.0, 1.0)
                }),
            ),
        ];
        for (name, got, want) in cases {
            assert_eq!(got.kind(), kind, "{name} {kind:?}: output dtype");
            assert!(
                got.equal(&want),
                "{name} {kind:?}: not the tensor-core result"
            );
        }

        // Convolution forward and backward (input and weight gradients).
        let (x, w, g) = (low(&[2, 5, 9, 9]), low(&[6, 5, 3, 3]), low(&[2, 6, 9, 9]));
        let conv = |x: &Tensor, w: &Tensor| x.conv2d(w, None::<&Tensor>, [1, 1], [1, 1], [1, 1], 1);
        let xs = on(&x).set_requires_grad(true);
        let ws = on(&w).set_requires_grad(true);
        let ys = conv(&xs, &ws);
        // d/dy sum(y * g) = g exactly, in either precision.
        (&ys * on(&g)).sum(Kind::Float).backward();
        let xf = x.to_kind(Kind::Float).set_requires_grad(true);
        let wf = w.to_kind(Kind::Float).set_requires_grad(true);
        (conv(&xf, &wf) * g.to_kind(Kind::Float))
            .sum(Kind::Float)
            .backward();
        let pairs = [
            ("conv forward", d.to_cpu(&ys), conv(&xf, &wf).to_kind(kind)),
            (
                "conv input grad",
                d.to_cpu(&xs.grad()),
                xf.grad().to_kind(kind),
            ),
            (
                "conv weight grad",
                d.to_cpu(&ws.grad()),
                wf.grad().to_kind(kind),
            ),
        ];
        for (name, got, want) in pairs {
            assert_eq!(got.kind(), kind, "{name} {kind:?}: dtype");
            assert!(
                got.equal(&want),
                "{name} {kind:?}: not the tensor-core result"
            );
        }
    }
}
