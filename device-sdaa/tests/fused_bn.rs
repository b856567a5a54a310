//! The fused batch norm + (residual add) + ReLU (device_sdaa::fused) against the same ops
//! composed in libtorch, computed in fp64 from the same inputs: the output, the running
//! statistics, and the gradients of x, the residual, weight and bias, for fp32 and bf16
//! (autocast's convolution outputs) and channel counts that are not a multiple of any vector
//! width. Tolerances: fp32 1e-4 (sums over a few hundred values in another order); bf16 the
//! output's own rounding (2⁻⁸ relative) on top of that.

use device_sdaa::fused::{batch_norm_relu, fusable, BatchNormParams};
use tch::{Device, Kind, Tensor};

/// Deterministic values (not the global RNG, shared by the tests running in parallel).
fn values(shape: &[i64], seed: f64, scale: f64, offset: f64) -> Tensor {
    let n = shape.iter().product::<i64>();
    ((Tensor::arange(n, (Kind::Double, Device::Cpu)) * 0.731 + seed).sin() * scale + offset)
        .reshape(shape)
}

fn channels_last(t: &Tensor) -> Tensor {
    t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2])
}

struct Case {
    x: Tensor,
    residual: Option<Tensor>,
    weight: Tensor,
    bias: Tensor,
    dy: Tensor,
}

fn case(shape: [i64; 4], residual: bool, kind: Kind) -> Case {
    let c = shape[1];
    let leaf = |t: Tensor| t.to_kind(kind).set_requires_grad(true);
    Case {
        x: leaf(channels_last(&values(&shape, 0.3, 2.0, 0.7))),
        residual: residual.then(|| leaf(channels_last(&values(&shape, 1.9, 1.0, 0.2)))),
        weight: values(&[c], 0.5, 0.4, 1.0)
            .to_kind(Kind::Float)
            .set_requires_grad(true),
        bias: values(&[c], 2.5, 0.3, 0.1)
            .to_kind(Kind::Float)
            .set_requires_grad(true),
        dy: channels_last(&values(&shape, 4.1, 1.0, 0.0)).to_kind(kind),
    }
}

/// What a run of the op leaves: output, running statistics, gradients (x, residual, weight,
/// bias), all as fp64.
struct Outcome {
    y: Tensor,
    running: [Tensor; 2],
    grads: Vec<Tensor>,
}

fn leaves(c: &Case) -> Vec<&Tensor> {
    let mut l = vec![&c.x, &c.weight, &c.bias];
    l.extend(c.residual.as_ref());
    l
}

fn running(c: i64) -> [Tensor; 2] {
    [
        values(&[c], 3.3, 0.2, 0.0).to_kind(Kind::Float),
        values(&[c], 0.9, 0.2, 1.0).to_kind(Kind::Float),
    ]
}

const MOMENTUM: f64 = 0.1;
const EPS: f64 = 1e-5;

fn params<'a>(
    c: &'a Case,
    running_mean: &'a Tensor,
    running_var: &'a Tensor,
) -> BatchNormParams<'a> {
    BatchNormParams {
        weight: &c.weight,
        bias: &c.bias,
        running_mean,
        running_var,
        momentum: MOMENTUM,
        eps: EPS,
    }
}

/// Gradients are of Σ y·dy, an upstream gradient of both signs.
fn backward(y: &Tensor, dy: &Tensor, leaves: &[&Tensor]) -> Vec<Tensor> {
    let loss = (y * dy).sum(Kind::Double);
    Tensor::run_backward(&[&loss], leaves, false, false)
        .iter()
        .map(|g| g.to_kind(Kind::Double))
        .collect()
}

fn fused(c: &Case) -> Outcome {
    let [rm, rv] = running(c.x.size()[1]);
    let bn = params(c, &rm, &rv);
    assert!(fusable(&c.x, c.residual.as_ref(), &bn));
    let y = batch_norm_relu(&c.x, c.residual.as_ref(), &bn).unwrap();
    assert_eq!(y.kind(), c.x.kind());
    assert_eq!(
        y.stride(),
        c.x.stride(),
        "the output keeps the channels-last layout"
    );
    Outcome {
        grads: backward(&y, &c.dy, &leaves(c)),
        y: y.to_kind(Kind::Double),
        running: [rm.to_kind(Kind::Double), rv.to_kind(Kind::Double)],
    }
}

/// libtorch's batch_norm, add and relu on fp64 copies of the same values.
fn reference(c: &Case) -> Outcome {
    let f64_leaf = |t: &Tensor| t.detach().to_kind(Kind::Double).set_requires_grad(true);
    let (x, w, b) = (f64_leaf(&c.x), f64_leaf(&c.weight), f64_leaf(&c.bias));
    let res = c.residual.as_ref().map(f64_leaf);
    let [rm, rv] = running(c.x.size()[1]).map(|t| t.to_kind(Kind::Double));
    let y = x.batch_norm(
        Some(&w),
        Some(&b),
        Some(&rm),
        Some(&rv),
        true,
        MOMENTUM,
        EPS,
        false,
    );
    let y = match &res {
        Some(r) => y + r,
        None => y,
    }
    .relu();
    let mut l = vec![&x, &w, &b];
    l.extend(res.as_ref());
    Outcome {
        grads: backward(&y, &c.dy.to_kind(Kind::Double), &l),
        y,
        running: [rm, rv],
    }
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

/// `got` within `atol + rtol·|want|` of `want`, elementwise.
fn assert_close(what: &str, got: &Tensor, want: &Tensor, atol: f64, rtol: f64) {
    assert_eq!(got.size(), want.size(), "{what}: shape");
    let excess = ((got - want).abs() - (want.abs() * rtol + atol))
        .max()
        .double_value(&[]);
    assert!(
        excess <= 0.0,
        "{what}: max |difference| {} beyond atol {atol} + rtol {rtol}",
        max_diff(got, want)
    );
}

fn check(shape: [i64; 4], residual: bool, kind: Kind) {
    let c = case(shape, residual, kind);
    let (got, want) = (fused(&c), reference(&c));
    let label = format!("{shape:?} residual={residual} {kind:?}");
    // bf16: the output and the activation gradients are rounded once to bf16 (2⁻⁸ relative);
    // the weight gradients are fp32 sums of bf16 products.
    let (atol, rtol) = if kind == Kind::Float {
        (1e-4, 1e-4)
    } else {
        (2e-2, 8e-3)
    };
    assert_close(&format!("{label}: y"), &got.y, &want.y, atol, rtol);
    for (i, name) in ["running_mean", "running_var"].iter().enumerate() {
        assert_close(
            &format!("{label}: {name}"),
            &got.running[i],
            &want.running[i],
            1e-5,
            1e-5,
        );
    }
    let names = ["dx", "dweight", "dbias", "dresidual"];
    for ((g, w), name) in got.grads.iter().zip(&want.grads).zip(names) {
        // Weight gradients sum a whole channel: scale the tolerance with its size.
        let scale = if name.starts_with("dw") || name.starts_with("db") {
            (shape[0] * shape[2] * shape[3]) as f64
        } else {
            1.0
        };
        assert_close(&format!("{label}: {name}"), g, w, atol * scale.sqrt(), rtol);
    }
    assert_eq!(got.grads.len(), want.grads.len());
}

#[test]
fn matches_libtorch_fp32() {
    for residual in [false, true] {
        check([4, 24, 5, 7], residual, Kind::Float);
        check([3, 67, 6, 5], residual, Kind::Float);
    }
}

#[test]
fn matches_libtorch_bf16() {
    for residual in [false, true] {
        check([4, 24, 5, 7], residual, Kind::BFloat16);
        check([3, 67, 6, 5], residual, Kind::BFloat16);
    }
}

/// Rows are split across the intra-op threads: an odd row count across a larger grid.
#[test]
fn matches_libtorch_over_many_rows() {
    check([5, 16, 31, 33], true, Kind::Float);
}

#[test]
fn keeps_nan_as_torch_relu_does() {
    let c = case([2, 8, 3, 3], false, Kind::Float);
    let x = c.x.detach().copy();
    let _ = x
        .narrow(1, 3, 1)
        .narrow(2, 0, 1)
        .narrow(3, 0, 1)
        .fill_(f64::NAN);
    let [rm, rv] = running(8);
    let bn = params(&c, &rm, &rv);
    let y = batch_norm_relu(&x, None, &bn).unwrap();
    let nan = y.isnan();
    assert!(
        bool::try_from(nan.narrow(1, 3, 1).all()).unwrap(),
        "channel 3 is NaN throughout"
    );
    assert!(
        !bool::try_from(nan.narrow(1, 0, 3).any()).unwrap(),
        "other channels are not"
    );
}

#[test]
fn declines_what_it_does_not_fuse() {
    let c = case([2, 8, 3, 3], true, Kind::Float);
    let [rm, rv] = running(8);
    let bn = params(&c, &rm, &rv);
    let nchw = c.x.contiguous();
    assert!(!fusable(&nchw, None, &bn), "nchw input");
    assert!(!fusable(&c.x.to_kind(Kind::Half), None, &bn), "fp16");
    assert!(
        !fusable(&c.x, Some(&nchw), &bn),
        "residual in another layout"
    );
    let one = Tensor::zeros([1, 8, 1, 1], (Kind::Float, Device::Cpu));
    assert!(!fusable(&one, None, &bn), "one value per channel");
    let w16 = c.weight.to_kind(Kind::BFloat16);
    assert!(
        !fusable(&c.x, None, &BatchNormParams { weight: &w16, ..bn }),
        "bf16 weight"
    );
}
