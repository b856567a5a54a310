//! `device-sdaa`: one device abstraction for CPU, CUDA and Tecorigin SDAA.
//!
//! The backend is chosen from `--device cpu | cuda[:N] | sdaa[:N]` at run time, so one set of
//! binaries runs on a CPU-only machine, an NVIDIA machine and an SDAA machine: the CUDA part of
//! libtorch and the SDAA libraries (libsdaart, libtecodnn, libtecoblas, libtccl and the torch
//! plugin) are loaded on demand.
//!
//! A [`Device`] is an opened, usable device. Tensors on SDAA live on libtorch's PrivateUse1
//! device (named `sdaa` by the plugin), which `tch::Device` cannot name: build models on the
//! CPU and move them with [`Device::move_var_store`], move inputs with [`Device::to_device`],
//! and never ask tch for the `device()` of an SDAA tensor (it reports `Mps`).

pub mod bindings;
pub mod capture;
pub mod cuda;
pub mod dist;
pub mod dump;
mod error;
pub mod fused;
pub mod nccl;
pub mod optim;
pub mod recompute;
pub mod report;
pub mod sdaa;
mod shim;
mod spec;
pub mod tccl;

use std::path::PathBuf;
use std::sync::Arc;

pub use error::DeviceError;
pub use report::{env_report, EnvReport};
pub use spec::{DeviceKind, DeviceSpec, ParseDeviceError};

/// How to open a device beyond its spec (CLI flags that override the environment).
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// `--sdaa_plugin`: the torch plugin library; overrides `SDAA_TORCH_PLUGIN`.
    pub sdaa_plugin: Option<PathBuf>,
}

/// Free and total device memory in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct MemoryInfo {
    pub free: u64,
    pub total: u64,
}

/// An opened, usable device. Cheap to clone.
#[derive(Clone)]
pub struct Device {
    spec: DeviceSpec,
    sdaa: Option<Arc<sdaa::Sdaa>>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Device({})", self.spec)
    }
}

impl Device {
    /// The CPU; never fails.
    pub fn cpu() -> Device {
        Device {
            spec: DeviceSpec::CPU,
            sdaa: None,
        }
    }

    /// Open a device with options from the environment (`SDAA_HOME`, `TECO_HOME`,
    /// `SDAA_TORCH_PLUGIN`).
    pub fn open(spec: DeviceSpec) -> Result<Device, DeviceError> {
        Device::open_with(spec, &OpenOptions::default())
    }

    /// Open a device: cpu always works; cuda loads libtorch_cuda.so and checks the ordinal;
    /// sdaa loads the SDAA libraries and the torch plugin and checks the ordinal.
    ///
    /// Open cuda/sdaa before the process runs its first backward pass: libtorch's autograd
    /// engine sizes its per-device queues once, from the devices registered at that moment.
    pub fn open_with(spec: DeviceSpec, opts: &OpenOptions) -> Result<Device, DeviceError> {
        match spec.kind {
            DeviceKind::Cpu => Ok(Device::cpu()),
            DeviceKind::Cuda => {
                cuda::load()?;
                let available = tch::Cuda::device_count().max(0) as usize;
                if spec.ordinal() >= available {
                    return Err(DeviceError::NoSuchDevice {
                        kind: DeviceKind::Cuda,
                        requested: spec.ordinal(),
                        available,
                    });
                }
                Ok(Device { spec, sdaa: None })
            }
            DeviceKind::Sdaa => {
                let s = sdaa::load(opts)?;
                let available = s.libraries.device_count()?;
                if spec.ordinal() >= available {
                    return Err(DeviceError::NoSuchDevice {
                        kind: DeviceKind::Sdaa,
                        requested: spec.ordinal(),
                        available,
                    });
                }
                s.libraries.set_device(spec.ordinal())?;
                Ok(Device {
                    spec,
                    sdaa: Some(s),
                })
            }
        }
    }

    pub fn spec(&self) -> DeviceSpec {
        self.spec
    }

    pub fn kind(&self) -> DeviceKind {
        self.spec.kind
    }

    pub fn ordinal(&self) -> usize {
        self.spec.ordinal()
    }

    fn c10_type(&self) -> std::os::raw::c_int {
        match self.kind() {
            DeviceKind::Cpu => shim::DEVICE_TYPE_CPU,
            DeviceKind::Cuda => shim::DEVICE_TYPE_CUDA,
            DeviceKind::Sdaa => shim::DEVICE_TYPE_PRIVATEUSE1,
        }
    }

    /// Copy a tensor to this device (non-blocking where the backend allows). Panics only if
    /// libtorch fails to copy to a device that opened successfully (out of device memory).
    pub fn to_device(&self, t: &tch::Tensor) -> tch::Tensor {
        match self.try_to_device(t) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`Device::to_device`] returning libtorch failures (e.g. device out of memory).
    pub fn try_to_device(&self, t: &tch::Tensor) -> Result<tch::Tensor, DeviceError> {
        match self.kind() {
            DeviceKind::Cpu => Ok(t.to_device(tch::Device::Cpu)),
            // Non-blocking: from pinned memory (the image loader's batches) the copy is queued
            // behind the step's kernels instead of stalling the host; from pageable memory
            // CUDA copies the source out before returning, so it is as safe as a blocking copy.
            DeviceKind::Cuda => shim::to_device(t, self.c10_type(), self.ordinal(), true),
            DeviceKind::Sdaa => shim::to_device(t, self.c10_type(), self.ordinal(), false),
        }
    }

    /// Copy a tensor to the host.
    pub fn to_cpu(&self, t: &tch::Tensor) -> tch::Tensor {
        match self.kind() {
            DeviceKind::Sdaa => match shim::to_device(t, shim::DEVICE_TYPE_CPU, 0, false) {
                Ok(t) => t,
                Err(e) => panic!("{e}"),
            },
            _ => t.to_device(tch::Device::Cpu),
        }
    }

    /// A real round trip: copy a tensor here, compute on it, copy it back, check the values.
    pub fn self_test(&self) -> Result<(), DeviceError> {
        let t = tch::Tensor::from_slice(&[1.0f32, 2.0, 3.0]);
        let on = self.try_to_device(&t)?;
        if !self.holds(&on) {
            return Err(DeviceError::Torch {
                action: "checking the device",
                message: format!("a tensor copied to {} did not land there", self.spec),
            });
        }
        let back = shim::to_device(&(on * 2.0), shim::DEVICE_TYPE_CPU, 0, false)?;
        if back != tch::Tensor::from_slice(&[2.0f32, 4.0, 6.0]) {
            return Err(DeviceError::Torch {
                action: "checking the device",
                message: format!("2 * [1, 2, 3] computed on {} came back wrong", self.spec),
            });
        }
        Ok(())
    }

    /// Whether a tensor lives on this device (works for SDAA tensors, unlike `tch`).
    pub fn holds(&self, t: &tch::Tensor) -> bool {
        match shim::tensor_device(t) {
            Ok((ty, idx)) => {
                ty == self.c10_type()
                    && (self.kind() == DeviceKind::Cpu || idx.max(0) as usize == self.ordinal())
            }
            Err(_) => false,
        }
    }

    /// Move every variable of a var store here: data replaced in place, so `requires_grad`,
    /// names and every handle held elsewhere (optimizers) stay valid. Build models on the CPU
    /// first: `tch::Device` has no SDAA (PrivateUse1) variant.
    pub fn move_var_store(&self, vs: &mut tch::nn::VarStore) -> Result<(), DeviceError> {
        match self.kind() {
            DeviceKind::Cpu => vs.set_device(tch::Device::Cpu),
            DeviceKind::Cuda => vs.set_device(tch::Device::Cuda(self.ordinal())),
            DeviceKind::Sdaa => {
                for (_, var) in vs.variables() {
                    shim::move_variable(&var, self.c10_type(), self.ordinal())?;
                }
            }
        }
        Ok(())
    }

    /// Run `f` with autocast enabled/disabled for this device type and `dtype`; the previous
    /// state is restored and the autocast cache cleared when `f` returns.
    pub fn autocast<T>(&self, enabled: bool, dtype: tch::Kind, f: impl FnOnce() -> T) -> T {
        let state = match shim::autocast_enter(self.c10_type(), enabled, dtype) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        struct Restore(shim::AutocastState);
        impl Drop for Restore {
            fn drop(&mut self) {
                if let Err(e) = shim::autocast_exit(&self.0) {
                    tracing::error!("{e}");
                }
            }
        }
        let _restore = Restore(state);
        f()
    }

    /// Whether autocast is on for this device type right now.
    pub fn autocast_enabled(&self) -> bool {
        shim::autocast_is_enabled(self.c10_type()).unwrap_or(false)
    }

    /// The dtype mixed precision uses by default: bf16 on CPU, fp16 on accelerators.
    pub fn default_amp_dtype(&self) -> tch::Kind {
        match self.kind() {
            DeviceKind::Cpu => tch::Kind::BFloat16,
            DeviceKind::Cuda | DeviceKind::Sdaa => tch::Kind::Half,
        }
    }

    /// The device type string of `torch.autocast(device_type=...)`.
    pub fn autocast_device_type(&self) -> &'static str {
        self.kind().as_str()
    }

    /// Seed every generator that can affect this device (the CPU one always: SDAA ops that
    /// fall back to the host draw from it).
    pub fn manual_seed(&self, seed: u64) {
        tch::manual_seed(seed as i64);
        if self.kind() == DeviceKind::Cuda {
            tch::Cuda::manual_seed_all(seed);
        }
    }

    /// Wait for all work queued on this device.
    pub fn synchronize(&self) {
        match self.kind() {
            DeviceKind::Cpu => {}
            DeviceKind::Cuda => tch::Cuda::synchronize(self.ordinal() as i64),
            DeviceKind::Sdaa => {
                if let Some(s) = &self.sdaa {
                    if let Err(e) = s.libraries.synchronize(self.ordinal()) {
                        tracing::error!("{e}");
                    }
                }
                if let Err(e) = shim::guard_synchronize(self.c10_type(), self.ordinal()) {
                    tracing::error!("{e}");
                }
            }
        }
    }

    /// Free and total device memory: SDAA from its runtime (`sdaaMemGetInfo`), CUDA from the
    /// CUDA runtime libtorch_cuda loaded (`cudaMemGetInfo`); `None` for the CPU or when the
    /// backend cannot say.
    pub fn memory_info(&self) -> Option<MemoryInfo> {
        let (free, total) = match self.kind() {
            DeviceKind::Cpu => return None,
            DeviceKind::Cuda => cuda::mem_info(self.ordinal()).ok()?,
            DeviceKind::Sdaa => self
                .sdaa
                .as_ref()?
                .libraries
                .mem_info(self.ordinal())
                .ok()?,
        };
        Some(MemoryInfo { free, total })
    }

    /// Number of devices of a kind; 0 when its backend cannot be loaded (never fails).
    /// For SDAA this loads the libraries (not the plugin) if nothing is loaded yet.
    pub fn device_count(kind: DeviceKind) -> usize {
        match kind {
            DeviceKind::Cpu => 1,
            DeviceKind::Cuda => cuda::device_count(),
            DeviceKind::Sdaa => match sdaa::loaded() {
                Some(s) => s.libraries.device_count().unwrap_or(0),
                None => sdaa::SdaaLibraries::load()
                    .and_then(|l| l.device_count())
                    .unwrap_or(0),
            },
        }
    }

    /// The c10d process-group backend for DDP on this device.
    pub fn process_group_backend(&self) -> &'static str {
        match self.kind() {
            DeviceKind::Cpu => "gloo",
            DeviceKind::Cuda => "nccl",
            DeviceKind::Sdaa => "tccl",
        }
    }

    /// TCCL's entry points (SDAA only): for the DDP process group.
    pub fn tccl(&self) -> Option<sdaa::TcclApi> {
        self.sdaa.as_ref().map(|s| s.libraries.api.tccl)
    }

    /// A human-readable device name ("NVIDIA H100 80GB HBM3" from the NVIDIA driver,
    /// "SDAA emulator device 0" from the SDAA runtime, "cpu").
    pub fn name(&self) -> String {
        match self.kind() {
            DeviceKind::Cpu => "cpu".to_string(),
            DeviceKind::Cuda => report::cuda_driver_info()
                .ok()
                .and_then(|(_, devices)| devices.into_iter().find(|d| d.index == self.ordinal()))
                .map(|d| d.name)
                .unwrap_or_else(|| format!("CUDA device {}", self.ordinal())),
            DeviceKind::Sdaa => self
                .sdaa
                .as_ref()
                .and_then(|s| s.libraries.device_name(self.ordinal()).ok())
                .unwrap_or_else(|| format!("SDAA device {}", self.ordinal())),
        }
    }
}
