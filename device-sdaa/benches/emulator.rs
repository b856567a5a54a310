//! What the SDAA emulator costs: one training step (forward + backward + SGD) of a small conv
//! net on `cpu` and on `sdaa` (emulator: every op is the CPU kernel on the device memory), side by
//! side, and a 2-rank-free TCCL check is left to the tests. Needs `make build` (the emulator).

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use device_sdaa::Device;
use tch::nn::{self, ModuleT, OptimizerConfig};
use tch::{Kind, Tensor};

fn net(vs: &nn::Path) -> nn::Sequential {
    nn::seq()
        .add(nn::conv2d(
            vs / "c1",
            3,
            16,
            3,
            nn::ConvConfig {
                padding: 1,
                ..Default::default()
            },
        ))
        .add_fn(|x| x.relu())
        .add(nn::conv2d(
            vs / "c2",
            16,
            16,
            3,
            nn::ConvConfig {
                stride: 2,
                ..Default::default()
            },
        ))
        .add_fn(|x| x.relu().flatten(1, -1))
        .add(nn::linear(vs / "fc", 16 * 15 * 15, 10, Default::default()))
}

fn step_bench(c: &mut Criterion, name: &str, device: &Device) {
    let mut vs = nn::VarStore::new(tch::Device::Cpu);
    let model = net(&vs.root());
    let mut opt = nn::Sgd::default().build(&vs, 0.01).unwrap();
    device.move_var_store(&mut vs).unwrap();
    let x = device.to_device(&Tensor::randn(
        [32, 3, 32, 32],
        (Kind::Float, tch::Device::Cpu),
    ));
    let y = device.to_device(&Tensor::randint(10, [32], (Kind::Int64, tch::Device::Cpu)));
    c.bench_function(&format!("train_step_32x3x32x32/{name}"), |b| {
        b.iter(|| {
            let loss = model.forward_t(&x, true).cross_entropy_for_logits(&y);
            opt.backward_step(&loss);
            device.synchronize();
        })
    });
}

fn benches(c: &mut Criterion) {
    // The plugin must be loaded before the first backward pass of the process (see
    // docs/devices.md), so open sdaa first and measure the CPU after.
    let home = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/sdaa-emulator");
    let sdaa = if home.join("lib64/libtorch_sdaa.so").is_file() {
        std::env::set_var("SDAA_HOME", &home);
        match Device::open("sdaa".parse().unwrap()) {
            Ok(d) => Some(d),
            Err(e) => panic!("{e}"),
        }
    } else {
        eprintln!("skipping sdaa: emulator not built (run `make build`)");
        None
    };
    step_bench(c, "cpu", &Device::cpu());
    if let Some(d) = sdaa {
        step_bench(c, "sdaa-emulator", &d);
    }
}

criterion_group! {
    name = group;
    config = Criterion::default().sample_size(20);
    targets = benches
}
criterion_main!(group);
