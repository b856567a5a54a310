//! The peak FLOP/s the language models' `train.mfu` (model FLOPs utilisation) is measured
//! against; shared by run_gpt and run_llama so their MFU figures compare.

use std::time::Instant;

use modelzoo_engine::TrainDevice;
use tch::{Device, Kind, Tensor};

/// The peak FLOP/s `train.mfu` is measured against, and where it came from. CUDA devices
/// whose name says H100 / H200 / A100 use the datasheet dense tensor-core peak for the
/// training dtype (H100/H200: 989 TFLOP/s bf16/fp16, 67 fp32; A100: 312 bf16/fp16, 19.5
/// fp32); every other device (the CPU, SDAA, the emulator, other GPUs) is measured once with
/// a short fp32 matmul on that device (best of ten 1024×1024×1024 products, about 0.2 s on
/// a 2-core CPU).
pub fn peak_flops(device: &dyn TrainDevice, name: &str, amp: bool) -> (f64, String) {
    let table: [(&str, f64, f64); 3] = [
        ("H100", 989.0e12, 67.0e12),
        ("H200", 989.0e12, 67.0e12),
        ("A100", 312.0e12, 19.5e12),
    ];
    if device.label().starts_with("cuda") {
        if let Some((gpu, half, single)) = table.iter().find(|(k, _, _)| name.contains(k)) {
            let (peak, what) = if amp {
                (*half, "bf16/fp16")
            } else {
                (*single, "fp32")
            };
            return (peak, format!("{gpu} datasheet dense {what} peak"));
        }
    }
    let n = 1024i64;
    let a = device.to_device(&Tensor::ones([n, n], (Kind::Float, Device::Cpu)));
    let b = device.to_device(&Tensor::ones([n, n], (Kind::Float, Device::Cpu)));
    let _ = a.matmul(&b);
    device.synchronize();
    let mut best = f64::INFINITY;
    for _ in 0..10 {
        let t = Instant::now();
        let _ = a.matmul(&b);
        device.synchronize();
        best = best.min(t.elapsed().as_secs_f64());
    }
    let peak = 2.0 * (n * n * n) as f64 / best.max(1e-9);
    (peak, format!("measured fp32 matmul on {}", device.label()))
}
