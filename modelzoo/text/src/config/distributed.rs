//! The `Distributed` section (only data parallelism is implemented) and the Paddle-only
//! `Profiler` and `Fused` sections, accepted when off and refused when on.

use serde::{Deserialize, Serialize};

use super::{unsupported, Unsupported};

/// `Distributed` (FleetX): the parallelism the config was written for. Only data parallelism
/// is implemented (`--nproc_per_node` / `--nnode`); a config asking for more would train on
/// one process without a word, so it is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Distributed {
    /// Data-parallel degree: must equal the run's data-parallel world (1 when not launched
    /// data-parallel); empty = whatever the run has.
    pub dp_degree: Option<u64>,
    pub mp_degree: Option<u64>,
    pub pp_degree: Option<u64>,
    pub sharding: Sharding,
}

/// `Distributed.sharding` (FleetX's ZeRO).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Sharding {
    pub sharding_degree: Option<u64>,
    pub sharding_stage: Option<u64>,
    pub sharding_offload: bool,
}

const NOT_PARALLEL: &str = "tensor/pipeline parallelism and ZeRO sharding are not implemented: this config would train on one process; set it to 1 (data parallelism: --nproc_per_node / --nnode, see docs/ddp.md)";

impl Distributed {
    /// Refuses model, pipeline and sharding parallelism.
    pub fn validate(&self) -> Result<(), Unsupported> {
        let s = &self.sharding;
        for (key, v) in [
            ("Distributed.mp_degree", self.mp_degree),
            ("Distributed.pp_degree", self.pp_degree),
            ("Distributed.sharding.sharding_degree", s.sharding_degree),
        ] {
            if let Some(v) = v.filter(|&v| v > 1) {
                return Err(unsupported(key, v, NOT_PARALLEL));
            }
        }
        if s.sharding_offload {
            return Err(unsupported(
                "Distributed.sharding.sharding_offload",
                true,
                "ZeRO offload is not implemented (optimizer state stays on the device); set it to False",
            ));
        }
        if self.dp_degree == Some(0) {
            return Err(unsupported(
                "Distributed.dp_degree",
                0,
                "must be at least 1 (or empty)",
            ));
        }
        Ok(())
    }

    /// `dp_degree` against the data-parallel world the run was launched with.
    pub fn check_world(&self, world: usize) -> Result<(), Unsupported> {
        match self.dp_degree {
            Some(dp) if dp != world as u64 => Err(unsupported(
                "Distributed.dp_degree",
                dp,
                format!(
                    "this run has {world} data-parallel process(es); launch {dp} with --nproc_per_node / --nnode (docs/ddp.md), or set dp_degree to {world} (or leave it empty)"
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// `Profiler` (FleetX): Paddle's profiler. Off is accepted (its other keys are then inert, as
/// in FleetX); on is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Profiler {
    pub enable: bool,
    pub scheduler: Option<Vec<u64>>,
    pub profiler_log: Option<String>,
    pub detailed: bool,
}

impl Profiler {
    pub fn validate(&self) -> Result<(), Unsupported> {
        if self.enable {
            return Err(unsupported(
                "Profiler.enable",
                true,
                "Paddle's profiler is not available; set it to False and use torch's profiler (PyTorch's Kineto) around the run, or --dump for one step's tensors",
            ));
        }
        Ok(())
    }
}

/// `Fused` (older FleetX configs): Paddle's tensor fusion, not available.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Fused {
    pub tensor_fusion: bool,
}
