//! The pieces [`crate::app::main`] runs a model with, one copy for every model: engine
//! settings from the standard command line over the FleetX config, the device of a worker, the
//! memory check, the dllogger metric sink, and the readable text of a libtorch error.

use std::path::{Path, PathBuf};
use std::time::Duration;

use device_sdaa::{Device, DeviceSpec};
use dllogger::{JsonStreamBackend, Logger, Metadata, StdOutBackend, Value, Verbosity};
use model_config::fleetx::EngineConfig;
use run_scripts_template::StandardArgs;

use crate::error::RunError;
use crate::launch::LaunchPlan;
use crate::{DataParallel, EngineError, EngineSettings, MetricSink, TrainDevice, WorldInfo};

/// A CUDA data-parallel job's GPUs, checked by the launcher before any worker starts (a
/// missing GPU is bad input, exit 2, not N failed workers): every worker's card must exist —
/// `cuda:0` .. `cuda:N-1` for a bare `--device cuda`, else the one named.
pub(crate) fn check_cuda_job(std: &StandardArgs, plan: &LaunchPlan) -> Result<(), String> {
    let Ok(spec) = std.device.parse::<DeviceSpec>() else {
        return Ok(()); // not a device spec: the workers report it
    };
    if spec.kind != device_sdaa::DeviceKind::Cuda {
        return Ok(());
    }
    let last = spec.index.unwrap_or(plan.nproc_per_node - 1);
    let need = DeviceSpec {
        kind: device_sdaa::DeviceKind::Cuda,
        index: Some(last),
    };
    let needed = match spec.index {
        None => format!("one CUDA device each, cuda:0 to cuda:{last}"),
        Some(i) => format!("CUDA device cuda:{i}"),
    };
    Device::open(need).map(drop).map_err(|e| {
        format!(
            "--device {} with --nproc_per_node {}: the workers need {needed} (DDP over NCCL): {e}",
            std.device, plan.nproc_per_node
        )
    })
}

/// `--device` for this process: a bare `cuda` / `sdaa` in a data-parallel worker means its
/// own card, `LOCAL_RANK`.
pub fn worker_device(spec: DeviceSpec) -> Result<DeviceSpec, EngineError> {
    match (WorldInfo::from_env()?, spec.index, spec.kind) {
        (Some(w), None, kind) if kind != device_sdaa::DeviceKind::Cpu => Ok(DeviceSpec {
            kind,
            index: Some(w.local_rank),
        }),
        _ => Ok(spec),
    }
}

/// Join the data-parallel job this process was launched into (torchrun environment), on
/// `device`; `None` for a single-process run. Waits `--dist_timeout` for the other ranks.
pub fn join_data_parallel(
    std: &StandardArgs,
    device: &Device,
) -> Result<Option<DataParallel>, EngineError> {
    let Some(world) = WorldInfo::from_env()? else {
        return Ok(None);
    };
    let secs = std.dist_timeout.max(1) as u64;
    DataParallel::join(world, device, Duration::from_secs(secs)).map(Some)
}

/// The run's metric logger: stdout (every rank, lines carry the rank) and, on the rank that
/// writes reports (rank 0, or a single process), the JSON stream at `json` (appended to when
/// resuming). Nothing is written yet (see [`DlloggerSink`]).
pub fn metric_logger(
    json: &Path,
    resume: bool,
    ddp: Option<&DataParallel>,
) -> std::io::Result<Logger> {
    let mut backends: Vec<Box<dyn dllogger::Backend>> =
        vec![Box::new(StdOutBackend::new(Verbosity::Default))];
    if ddp.is_none_or(DataParallel::is_main) {
        backends.push(Box::new(if resume {
            JsonStreamBackend::append(Verbosity::Verbose, json)?
        } else {
            JsonStreamBackend::create(Verbosity::Verbose, json)?
        }));
    }
    Ok(Logger::new(backends))
}

/// The run's `PARAMETER` record (batch sizes, parameters), logged by [`DlloggerSink`] once the
/// engine has accepted the run.
pub fn parameter_record(
    ddp: Option<&DataParallel>,
    batch_size: usize,
    parameters: i64,
) -> Vec<(&'static str, Value)> {
    let world = ddp.map_or(1, |d| d.world.world_size);
    tracing::info!(
        "global batch {} = batch {batch_size} x world size {world}",
        batch_size * world
    );
    vec![
        ("batch_size", Value::Int(batch_size as i64)),
        ("world_size", Value::Int(world as i64)),
        ("global_batch_size", Value::Int((batch_size * world) as i64)),
        ("parameters", Value::Int(parameters)),
    ]
}

fn bad(msg: impl Into<String>) -> EngineError {
    EngineError::Settings(msg.into())
}

/// The engine settings: the FleetX `Engine` section (`section`, from `-c` / `-o`) first, then
/// the standard flags on top — every flag the user typed wins; without a config the flags'
/// defaults apply. AMP is settled once the device is open ([`crate::app::settle_precision`]).
pub fn settings_from_args(
    std: &StandardArgs,
    section: Option<&EngineConfig>,
) -> Result<EngineSettings, EngineError> {
    let from_config = section.is_some();
    let mut s = match section {
        Some(cfg) => EngineSettings::from_fleetx(cfg)?,
        None => EngineSettings::default(),
    };
    let typed = &std.explicit;
    if typed.step || !from_config {
        s.max_steps = match std.step {
            -1 => None,
            n if n > 0 => Some(n as u64),
            n => {
                return Err(bad(format!(
                    "--step {n}: must be -1 (whole epochs) or a positive number of iterations"
                )))
            }
        };
    }
    if typed.epoch || !from_config {
        s.num_train_epochs = std.epoch as u64;
    }
    if typed.logging_freq || !from_config {
        s.logging_freq = std.logging_freq as u64;
    }
    if typed.output_dir || !from_config {
        s.ckpt_dir = output_dir(std, section).join("checkpoints");
    }
    if let Some(r) = &std.resume {
        s.resume = Some(r.clone());
    }
    s.seed = std.seed as u64;
    s.rank = dllogger::rank_from_env().unwrap_or(0) as i64;
    s.dump = crate::dump::from_args(std)?;
    s.fixed_batch = std.fixed_batch;
    Ok(s)
}

/// The engine settings of a model whose config has only engine sections: the FleetX config
/// (`-c`, `-o`) loaded, refused if it has a section outside `sections` (it would be silently
/// ignored), its `Engine` section under the standard flags ([`settings_from_args`]).
pub fn settings_from_config(
    std: &StandardArgs,
    sections: &[&str],
) -> Result<EngineSettings, RunError> {
    let tree = model_config::fleetx::load(std.config.as_deref(), &std.r#override)
        .map_err(RunError::input)?;
    tree.check_sections(sections).map_err(RunError::input)?;
    let section: Option<EngineConfig> = tree.section("Engine").map_err(RunError::input)?;
    // These models place no op by name: a precision list would be ignored, so it is refused.
    if let Some(cfg) = &section {
        cfg.mix_precision
            .check_lists(false, &[])
            .map_err(RunError::input)?;
    }
    settings_from_args(std, section.as_ref()).map_err(RunError::input)
}

/// At least how many bytes a training step needs, and where: what [`check_memory`] compares
/// with the memory there is, so an impossible `--batch_size` / `--image_size` / model size is
/// refused up front (exit 2) instead of aborting in the allocator or being OOM-killed. An
/// estimate is a lower bound (the input batch, the activations the first layers must keep for
/// backward, parameters and optimizer state): a run it refuses cannot fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryNeed {
    /// Bytes in host memory whatever the device: the batches the data loader holds.
    pub host: u64,
    /// Bytes where the model trains: activations, parameters, gradients, optimizer state.
    pub device: u64,
    /// The arguments and config keys that set the size, as typed (`--batch_size 64
    /// --image_size 224`): what the user should lower.
    pub args: String,
    /// What was counted, for the message.
    pub counted: String,
}

/// The product of `factors` in bytes, saturating at `u64::MAX` where it overflows (so a
/// size too large to compute is still too large to fit, never wrapped to a small one).
pub fn bytes(factors: &[u64]) -> u64 {
    factors
        .iter()
        .try_fold(1u64, |acc, &f| acc.checked_mul(f))
        .unwrap_or(u64::MAX)
}

/// `a + b + ...` saturating at `u64::MAX`.
pub fn bytes_sum(terms: &[u64]) -> u64 {
    terms.iter().fold(0u64, |acc, &t| acc.saturating_add(t))
}

/// A byte count for messages: `12.4 GiB`; `u64::MAX` (saturated) says it overflowed.
pub fn human_bytes(n: u64) -> String {
    if n == u64::MAX {
        return "more than 16 EiB (the size overflows 64-bit arithmetic)".into();
    }
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < units.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.1} {}", units[unit])
    }
}

/// Host memory this process may still allocate, and where that figure comes from:
/// `MemAvailable` in /proc/meminfo, lowered to what the cgroup's `memory.max` leaves when
/// that is smaller (containers). `None` when neither can be read.
pub fn host_available() -> Option<(u64, &'static str)> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib.saturating_mul(1024))
    });
    let read = |f: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{f}"))
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
    };
    let cgroup =
        read("memory.max").map(|max| max.saturating_sub(read("memory.current").unwrap_or(0)));
    match (meminfo, cgroup) {
        (Some(m), Some(c)) if c < m => Some((c, "left under the cgroup's memory.max")),
        (Some(m), _) => Some((m, "MemAvailable in /proc/meminfo")),
        (None, Some(c)) => Some((c, "left under the cgroup's memory.max")),
        (None, None) => None,
    }
}

/// A run that cannot fit in memory (see [`check_memory`]): bad input, exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotEnoughMemory(pub String);

/// Refuse a run whose [`MemoryNeed`] exceeds the memory there is: on the CPU host and device
/// needs together against [`host_available`] shared by the `local_procs` processes of this
/// node; on an accelerator the device need against its free memory (`memory_info`, when the
/// backend can say) and the host need against the host's share. The error names the
/// arguments, the estimate and what is available.
pub fn check_memory(
    need: &MemoryNeed,
    device: &Device,
    local_procs: usize,
) -> Result<(), NotEnoughMemory> {
    let share = |avail: u64| avail / local_procs.max(1) as u64;
    let on_cpu = device.kind() == device_sdaa::DeviceKind::Cpu;
    let mut checks: Vec<(u64, String, u64, String)> = Vec::new();
    if let Some((avail, source)) = host_available() {
        let (n, place) = if on_cpu {
            (
                bytes_sum(&[need.host, need.device]),
                "host memory".to_string(),
            )
        } else {
            (need.host, "host memory (data loader)".to_string())
        };
        let source = if local_procs > 1 {
            format!("{source}, shared by the {local_procs} processes of this node")
        } else {
            source.to_string()
        };
        checks.push((n, place, share(avail), source));
    }
    if !on_cpu {
        if let Some(info) = device.memory_info() {
            checks.push((
                need.device,
                format!("{} memory", device.spec()),
                info.free,
                format!("free of {} on the device", human_bytes(info.total)),
            ));
        }
    }
    for (n, place, avail, source) in checks {
        if n > avail {
            let amount = match n {
                u64::MAX => human_bytes(n),
                _ => format!("at least {}", human_bytes(n)),
            };
            return Err(NotEnoughMemory(format!(
                "{}: one training step needs {amount} of {place} ({}), but {} is available ({source}); lower them",
                need.args,
                need.counted,
                human_bytes(avail)
            )));
        }
    }
    Ok(())
}

/// Where logs and checkpoints go: `--output_dir` when typed (or when there is no config),
/// else the config's `Engine.save_load.output_dir`.
pub fn output_dir(std: &StandardArgs, cfg: Option<&EngineConfig>) -> PathBuf {
    match cfg {
        Some(c) if !std.explicit.output_dir => c.save_load.output_dir.clone(),
        _ => std.output_dir.clone(),
    }
}

/// The device the engine trains on: `device` itself, or with `--dump_dtype fp64` the float64
/// arbiter over it ([`crate::Fp64Device`]; `fp64` holds it for the run).
pub fn train_device<'a>(
    device: &'a dyn TrainDevice,
    settings: &EngineSettings,
    fp64: &'a mut Option<crate::Fp64Device<'a>>,
) -> &'a dyn TrainDevice {
    if settings.dump.as_ref().is_some_and(|d| d.fp64) {
        fp64.insert(crate::Fp64Device(device))
    } else {
        device
    }
}

/// What every run states about itself in its `PARAMETER` record besides the batch sizes: the
/// model, the device, the precision, the seed and the schedule's step limit — so `modelzoo
/// compare` can tell two runs that computed different things from a port that drifted.
pub fn run_facts(
    model_name: &str,
    device: &Device,
    settings: &EngineSettings,
) -> Vec<(&'static str, Value)> {
    let precision = match settings.precision {
        crate::Precision::Fp32 => "fp32".to_string(),
        crate::Precision::Amp { dtype, .. } => match dtype {
            tch::Kind::BFloat16 => "amp-bf16".to_string(),
            tch::Kind::Half => "amp-fp16".to_string(),
            other => format!("amp-{other:?}"),
        },
    };
    let mut facts = vec![
        ("model_name", Value::Str(model_name.to_string())),
        ("device", Value::Str(device.spec().to_string())),
        ("precision", Value::Str(precision)),
        ("seed", Value::Int(settings.seed as i64)),
    ];
    if let Some(steps) = settings.max_steps {
        facts.push(("max_steps", Value::Int(steps as i64)));
    }
    facts
}

/// The JSON metric stream of a run: `<output_dir>/<model_name>_log.json`.
pub fn log_path(output_dir: &Path, model_name: &str) -> PathBuf {
    output_dir.join(format!("{model_name}_log.json"))
}

/// dllogger as the engine's metric sink: `rank` as an integer, everything else as floats.
pub struct DlloggerSink<'a> {
    logger: &'a mut Logger,
    /// Until the engine declares its metrics (once `fit` has accepted the run — its settings,
    /// the checkpoint resumed from), nothing is written: the `PARAMETER` record waits here and
    /// messages are queued, so a run refused at start writes nothing into the log it would
    /// have continued.
    pending: Option<BeforeStart>,
}

/// What a [`DlloggerSink`] holds back until the run starts.
struct BeforeStart {
    parameters: Vec<(&'static str, Value)>,
    infos: Vec<String>,
}

impl<'a> DlloggerSink<'a> {
    /// A sink that writes `parameters` as the `PARAMETER` record first of all.
    pub fn new(logger: &'a mut Logger, parameters: Vec<(&'static str, Value)>) -> Self {
        DlloggerSink {
            logger,
            pending: Some(BeforeStart {
                parameters,
                infos: Vec::new(),
            }),
        }
    }

    /// The run was accepted: write what waited.
    fn start(&mut self) {
        if let Some(BeforeStart { parameters, infos }) = self.pending.take() {
            self.logger
                .log("PARAMETER", &parameters, Verbosity::Default);
            for text in infos {
                self.logger.info(&text);
            }
        }
    }
}

impl MetricSink for DlloggerSink<'_> {
    fn metadata(&mut self, name: &str, unit: &str, goal: &str, stage: &str) {
        self.start();
        self.logger.metadata(
            name,
            Metadata::new()
                .with_unit(unit)
                .with_goal(goal)
                .with_stage(stage),
        );
    }
    fn log(&mut self, epoch: u64, iteration: u64, metrics: &[(&str, f64)]) {
        self.start();
        let values: Vec<(&str, Value)> = metrics
            .iter()
            .map(|(k, v)| {
                let v = if *k == "rank" {
                    Value::Int(*v as i64)
                } else {
                    Value::Float(*v)
                };
                (*k, v)
            })
            .collect();
        self.logger
            .log((epoch, iteration), &values, Verbosity::Default);
    }
    fn event(&mut self, name: &str, fields: &[(&str, f64)]) {
        self.start();
        let values: Vec<(&str, Value)> =
            fields.iter().map(|(k, v)| (*k, Value::Float(*v))).collect();
        self.logger.log(name, &values, Verbosity::Default);
    }
    fn info(&mut self, text: &str) {
        match &mut self.pending {
            Some(waiting) => waiting.infos.push(text.to_string()),
            None => self.logger.info(text),
        }
    }
}
