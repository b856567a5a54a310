//! The fused batch norm + ReLU (device_sdaa::fused) against libtorch's separate ops, as
//! ResNet-50 at batch 16 runs them on the CPU in channels-last: a forward and backward of
//! `relu(bn(x))` (the stem and layer1's inner convolutions) and of `relu(bn(x) + identity)`
//! (layer1's and layer2's block outputs), fp32 and bf16, on libtorch's default intra-op
//! threads (set OMP_NUM_THREADS). Both sides take the same upstream gradient through
//! `sum(y · dy)`, whose own cost is in both figures.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use device_sdaa::fused::{batch_norm_relu, BatchNormParams};
use tch::{Device, Kind, Tensor};

fn channels_last(t: Tensor) -> Tensor {
    t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2])
}

fn bench(c: &mut Criterion) {
    let cases: [([i64; 4], bool); 3] = [
        ([16, 64, 112, 112], false),
        ([16, 256, 56, 56], true),
        ([16, 512, 28, 28], true),
    ];
    let mut group = c.benchmark_group("bn_relu");
    group.sample_size(10);
    for kind in [Kind::Float, Kind::BFloat16] {
        for (shape, residual) in cases {
            let ch = shape[1];
            let cpu = (Kind::Float, Device::Cpu);
            let input = |seed: i64| {
                tch::manual_seed(seed);
                channels_last(Tensor::randn(shape, cpu)).to_kind(kind)
            };
            let x = input(1).set_requires_grad(true);
            let r = input(2).set_requires_grad(true);
            let dy = input(3);
            let w = Tensor::ones([ch], cpu).set_requires_grad(true);
            let b = Tensor::zeros([ch], cpu).set_requires_grad(true);
            let (rm, rv) = (Tensor::zeros([ch], cpu), Tensor::ones([ch], cpu));
            let bn = BatchNormParams {
                weight: &w,
                bias: &b,
                running_mean: &rm,
                running_var: &rv,
                momentum: 0.1,
                eps: 1e-5,
            };
            let mut leaves = vec![&x, &w, &b];
            if residual {
                leaves.push(&r);
            }
            let step = |y: Tensor| {
                let loss = (&y * &dy).sum(Kind::Float);
                Tensor::run_backward(&[&loss], &leaves, false, false)
            };
            let name = format!(
                "{:?} {shape:?}{}",
                kind,
                if residual { " +identity" } else { "" }
            );
            group.bench_function(BenchmarkId::new("libtorch", &name), |bench| {
                bench.iter(|| {
                    let y = x.batch_norm(
                        Some(&w),
                        Some(&b),
                        Some(&rm),
                        Some(&rv),
                        true,
                        0.1,
                        1e-5,
                        false,
                    );
                    step(if residual { (y + &r).relu() } else { y.relu() })
                })
            });
            group.bench_function(BenchmarkId::new("fused", &name), |bench| {
                bench.iter(|| step(batch_norm_relu(&x, residual.then_some(&r), &bn).unwrap()))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
