//! The engine's view of a training device: the handful of operations the loop needs. The
//! `device-sdaa` crate's `Device` (cpu | cuda | sdaa, loaded at run time) is the production
//! implementation; `tch::Device` implements it too (CPU/CUDA; autocast on CUDA only).

use tch::{nn::VarStore, Kind, Tensor};

/// What the training loop needs from a device.
pub trait TrainDevice {
    /// A human-readable name for logs (`cpu`, `cuda:0`, `sdaa:0`).
    fn label(&self) -> String;
    /// Copy a CPU tensor to the device.
    fn to_device(&self, t: &Tensor) -> Tensor;
    /// Copy a device tensor to the CPU.
    fn to_cpu(&self, t: &Tensor) -> Tensor;
    /// Move a model built in a CPU `VarStore` onto the device.
    fn move_var_store(&self, vs: &mut VarStore) -> Result<(), String>;
    /// Run `f` under autocast to `dtype` (mixed precision) when `enabled`.
    fn autocast_with(&self, enabled: bool, dtype: Kind, f: &mut dyn FnMut() -> Tensor) -> Tensor;
    /// The reduced-precision dtype AMP uses by default here (fp16 on accelerators, bf16 on CPU).
    fn default_amp_dtype(&self) -> Kind;
    /// Seed the device's random generator.
    fn manual_seed(&self, seed: u64);
    /// Wait for queued work (so wall-clock timings are honest).
    fn synchronize(&self);
    /// Free and total device memory in bytes, where the device reports it (not the CPU).
    fn memory_info(&self) -> Option<(u64, u64)> {
        None
    }
}

impl TrainDevice for tch::Device {
    fn label(&self) -> String {
        match self {
            tch::Device::Cpu => "cpu".into(),
            tch::Device::Cuda(i) => format!("cuda:{i}"),
            other => format!("{other:?}").to_lowercase(),
        }
    }
    fn to_device(&self, t: &Tensor) -> Tensor {
        t.to_device(*self)
    }
    fn to_cpu(&self, t: &Tensor) -> Tensor {
        t.to_device(tch::Device::Cpu)
    }
    fn move_var_store(&self, vs: &mut VarStore) -> Result<(), String> {
        vs.set_device(*self);
        Ok(())
    }
    fn autocast_with(&self, enabled: bool, _dtype: Kind, f: &mut dyn FnMut() -> Tensor) -> Tensor {
        // tch's autocast covers CUDA only; CPU autocast needs device-sdaa's Device.
        tch::autocast(enabled && self.is_cuda(), f)
    }
    fn default_amp_dtype(&self) -> Kind {
        if self.is_cuda() {
            Kind::Half
        } else {
            Kind::BFloat16
        }
    }
    fn manual_seed(&self, seed: u64) {
        tch::manual_seed(seed as i64);
        if self.is_cuda() {
            tch::Cuda::manual_seed_all(seed);
        }
    }
    fn synchronize(&self) {
        if let tch::Device::Cuda(i) = self {
            tch::Cuda::synchronize(*i as i64);
        }
    }
}

impl TrainDevice for device_sdaa::Device {
    fn label(&self) -> String {
        self.spec().to_string()
    }
    fn to_device(&self, t: &Tensor) -> Tensor {
        device_sdaa::Device::to_device(self, t)
    }
    fn to_cpu(&self, t: &Tensor) -> Tensor {
        device_sdaa::Device::to_cpu(self, t)
    }
    fn move_var_store(&self, vs: &mut VarStore) -> Result<(), String> {
        device_sdaa::Device::move_var_store(self, vs).map_err(|e| e.to_string())
    }
    fn autocast_with(&self, enabled: bool, dtype: Kind, f: &mut dyn FnMut() -> Tensor) -> Tensor {
        self.autocast(enabled, dtype, f)
    }
    fn default_amp_dtype(&self) -> Kind {
        device_sdaa::Device::default_amp_dtype(self)
    }
    fn manual_seed(&self, seed: u64) {
        device_sdaa::Device::manual_seed(self, seed)
    }
    fn synchronize(&self) {
        device_sdaa::Device::synchronize(self)
    }
    fn memory_info(&self) -> Option<(u64, u64)> {
        device_sdaa::Device::memory_info(self).map(|m| (m.free, m.total))
    }
}
