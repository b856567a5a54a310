//! The `Global` section (FleetX's current layout): device, seed and batch sizes.

use serde::{Deserialize, Serialize};

use super::{unsupported, Unsupported};

/// `Global` (FleetX's current layout): the run's device, seed and batch sizes. The batch sizes
/// fill `Data.batch_size` ([`DataSection::resolve`](super::DataSection::resolve)); `seed` is
/// the run's seed unless `--seed` is typed; `device` must agree with the run's device unless
/// `--device` is typed ([`Global::check_device`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Global {
    pub device: Option<String>,
    pub seed: Option<u64>,
    pub global_batch_size: Option<u64>,
    pub local_batch_size: Option<u64>,
    pub micro_batch_size: Option<u64>,
}

impl Global {
    /// `Global.device` as the `--device` kind it means: FleetX's `gpu` is `cuda`; `cpu`,
    /// `cuda` and `sdaa` as they are. FleetX's `xpu` / `npu` and anything else are refused.
    pub fn device_kind(&self) -> Result<Option<&'static str>, Unsupported> {
        let Some(device) = self.device.as_deref() else {
            return Ok(None);
        };
        match device.to_ascii_lowercase().as_str() {
            "gpu" | "cuda" => Ok(Some("cuda")),
            "cpu" => Ok(Some("cpu")),
            "sdaa" => Ok(Some("sdaa")),
            "xpu" | "npu" => Err(unsupported(
                "Global.device",
                device,
                "Kunlun XPU / Ascend NPU are not devices this kit runs on; use gpu (CUDA), sdaa or cpu",
            )),
            _ => Err(unsupported(
                "Global.device",
                device,
                "valid: gpu (CUDA), sdaa, cpu",
            )),
        }
    }

    /// A `Global.device` that disagrees with the run's `--device` is an error saying which
    /// `--device` to pass — unless `--device` was typed (`device_typed`): flags win over
    /// every config key.
    pub fn check_device(&self, run_device: &str, device_typed: bool) -> Result<(), Unsupported> {
        let Some(kind) = self.device_kind()? else {
            return Ok(());
        };
        let run_kind = run_device.split(':').next().unwrap_or(run_device);
        if device_typed || run_kind == kind {
            return Ok(());
        }
        Err(unsupported(
            "Global.device",
            self.device.as_deref().unwrap_or_default(),
            format!(
                "the config asks for {kind}, but this run is on the default --device {run_device}: pass --device {kind} (or --device {run_device} to run there anyway: the flag wins over Global.device)"
            ),
        ))
    }
}
