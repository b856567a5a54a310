//! Autocast on the SDAA emulator's PrivateUse1 device. The plugin registers libtorch 2.11's
//! CUDA cast policies for `AutocastPrivateUse1` and lets every other op fall through; before
//! the fallthrough, `aten::batch_norm` under autocast on sdaa failed with "Could not run
//! 'aten::batch_norm' with arguments from the 'Autocastsdaa' backend".
//!
//! Checked here: the dtype each op class gets (as CUDA: convs/matmuls fp16, softmax/losses/norms
//! fp32, ops in no list keep their input dtype), the banned binary_cross_entropy, and a conv+BN
//! net whose forward and backward under autocast on sdaa equal, bit for bit, the same net under
//! autocast(fp16) on CPU (the emulator runs the CPU kernels; conv, linear and batch_norm get the
//! same policy on both autocast keys).

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

#[test]
fn conv_bn_net_forward_and_backward_under_autocast_equal_cpu_autocast_bit_for_bit() {
    let d = sdaa();
    let cpu = Device::cpu();
    let x = randn(&[8, 3, 12, 12]) * 3.0 + 1.5;
    let y = Tensor::from_slice(&[0i64, 1, 2, 3, 4, 5, 6, 7]);
    let init = nn::VarStore::new(tch::Device::Cpu);
    let _ = common::conv_net(&init.root());

    let (cpu_logits, cpu_loss, cpu_grads) = forward_backward(&cpu, &init, &x, &y);
    let (sdaa_logits, sdaa_loss, sdaa_grads) = forward_backward(&d, &init, &x, &y);

    // The net really ran in fp16 on both, so equality is not two fp32 runs agreeing.
    assert_eq!(sdaa_logits.kind(), Kind::Half);
    assert_eq!(cpu_logits.kind(), Kind::Half);
    assert!(sdaa_logits.equal(&cpu_logits), "logits differ");
    let loss = f32::try_from(&sdaa_loss).unwrap();
    assert!(loss.is_finite(), "loss {loss}");
    assert!(
        sdaa_loss.equal(&cpu_loss),
        "loss differs: sdaa {sdaa_loss:?} cpu {cpu_loss:?}"
    );

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
            bool::try_from(b.isfinite().all()).unwrap(),
            "{n}: non-finite gradient"
        );
        assert!(
            f64::try_from(b.abs().sum(Kind::Double)).unwrap() > 0.0,
            "{n}: zero gradient"
        );
        assert!(a.equal(b), "{n}: gradient differs: cpu {a:?} vs sdaa {b:?}");
    }
}
