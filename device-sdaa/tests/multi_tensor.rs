//! The optimizer step's multi-tensor ops (device_sdaa::optim: the global gradient norm, a
//! scale applied to every gradient, the fp16 loss scaler's unscale with its inf/NaN check) on
//! the CPU, where they are libtorch's `_foreach_*` / `_amp_foreach_*` kernels, and on the SDAA
//! emulator, where they are one op per tensor: both must give what the per-tensor arithmetic
//! gives, for gradients of mixed layouts and dtypes.

mod common;

use device_sdaa::optim::{grad_norm, mul_, unscale_};
use device_sdaa::Device;
use tch::{Kind, Tensor};

/// Gradients as an optimizer sees them: contiguous fp32, channels-last fp32, a strided view,
/// a bf16 vector, an fp64 matrix (the dump's precision) and a 0-dim scalar, the same values at
/// each call (not from the global RNG, which the tests running in parallel share).
fn grads() -> Vec<Tensor> {
    let values = |shape: &[i64], seed: f64| {
        let n = shape.iter().product::<i64>();
        (Tensor::arange(n, (Kind::Float, tch::Device::Cpu)) * 0.37 + seed)
            .sin()
            .reshape(shape)
    };
    let nchw = values(&[2, 3, 4, 4], 1.0);
    vec![
        values(&[5, 3], 0.0),
        nchw.permute([0, 2, 3, 1])
            .contiguous()
            .permute([0, 3, 1, 2]),
        values(&[4, 6], 2.0).slice(1, 0, 6, 2),
        values(&[7], 3.0).to_kind(Kind::BFloat16),
        values(&[3, 2], 4.0).to_kind(Kind::Double),
        Tensor::from(2.5f32),
    ]
}

/// The norm of every element of `ts` together, in f64.
fn reference_norm(ts: &[Tensor]) -> f64 {
    ts.iter()
        .map(|t| {
            t.to_kind(Kind::Double)
                .square()
                .sum(Kind::Double)
                .double_value(&[])
        })
        .sum::<f64>()
        .sqrt()
}

fn max_diff(a: &[Tensor], b: &[Tensor]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            (x.to_kind(Kind::Double) - y.to_kind(Kind::Double))
                .abs()
                .max()
                .double_value(&[])
        })
        .fold(0.0, f64::max)
}

/// The five checks, on tensors already placed where they run; `to_cpu` brings results back.
fn check_all(place: impl Fn(&Tensor) -> Tensor, to_cpu: impl Fn(&Tensor) -> Tensor) {
    let want = grads();
    let gs: Vec<Tensor> = grads().iter().map(&place).collect();

    // The norm, in float32 (bf16 elements widened): within float32 rounding of the f64 sum.
    let norm = to_cpu(&grad_norm(&gs).unwrap());
    assert_eq!(norm.kind(), Kind::Float);
    assert_eq!(norm.dim(), 0);
    let (got, expect) = (norm.double_value(&[]), reference_norm(&want));
    assert!((got - expect).abs() < 1e-5 * expect, "{got} vs {expect}");
    assert_eq!(
        grad_norm(&[]).unwrap().double_value(&[]),
        0.0,
        "no gradients"
    );

    // A scale applied in place to every tensor, whatever its dtype and layout.
    let factor = place(&Tensor::from_slice(&[0.25f32]));
    mul_(&gs, &factor).unwrap();
    let back: Vec<Tensor> = gs.iter().map(&to_cpu).collect();
    let scaled: Vec<Tensor> = want.iter().map(|t| t * 0.25).collect();
    assert!(
        max_diff(&back, &scaled) == 0.0,
        "a power of two scales exactly"
    );
    for (t, w) in back.iter().zip(&want) {
        assert_eq!(t.kind(), w.kind(), "dtype kept");
    }

    // Unscale of finite gradients: divided, found_inf stays 0.
    let inv = place(&Tensor::from_slice(&[4.0f32]));
    let found_inf = place(&Tensor::zeros([1], (Kind::Float, tch::Device::Cpu)));
    unscale_(&gs, &inv, &found_inf).unwrap();
    let back: Vec<Tensor> = gs.iter().map(&to_cpu).collect();
    assert!(max_diff(&back, &want) == 0.0, "unscaled back to the start");
    assert_eq!(to_cpu(&found_inf).double_value(&[0]), 0.0, "all finite");

    // An inf in the fp32 matrix, then a NaN in the bf16 vector: found_inf becomes 1.
    for (element, bad) in [
        (gs[0].get(1).get(2), f64::INFINITY),
        (gs[3].get(4), f64::NAN),
    ] {
        let _ = found_inf.shallow_clone().zero_();
        let _ = element.shallow_clone().fill_(bad);
        unscale_(&gs, &inv, &found_inf).unwrap();
        assert_eq!(
            to_cpu(&found_inf).double_value(&[0]),
            1.0,
            "{bad} in a gradient"
        );
    }
}

#[test]
fn multi_tensor_ops_match_per_tensor_arithmetic_on_the_cpu() {
    check_all(|t| t.shallow_clone(), |t| t.copy());
}

#[test]
fn per_tensor_fallback_on_the_sdaa_emulator_gives_the_same() {
    common::use_emulator();
    let d = Device::open("sdaa:0".parse().unwrap())
        .unwrap_or_else(|e| panic!("opening sdaa on the emulator failed: {e}"));
    check_all(|t| d.to_device(t), |t| d.to_cpu(t));
}
