//! What every `run_<model>` binary needs around [`crate::Engine`], kept here so the models
//! share one copy: engine settings from the standard command line over the FleetX config, the
//! dllogger metric sink, and the readable text of a libtorch error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use dllogger::{Logger, Metadata, Value, Verbosity};
use model_config::fleetx::EngineConfig;
use run_scripts_template::{ArgSpec, ResolvedArgs};
use tch::Kind;

use crate::{EngineError, EngineSettings, MetricSink, Precision};

/// The start of every `run_<model>` binary: diagnostics through `tracing` on stderr (`RUST_LOG`
/// honoured, `info` by default, never on stdout with the metric lines), then the command line
/// parsed against the model's merged spec. `Err(code)` means the process ends now: the spec
/// did not load (2), or `--print_cmd` printed the resolved command (0). clap's own usage
/// errors exit 2 with the valid values.
pub fn start<E: std::fmt::Display>(
    program: &str,
    about: &str,
    spec: Result<ArgSpec, E>,
) -> Result<ResolvedArgs, ExitCode> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let spec = spec.map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })?;
    let args = ResolvedArgs::parse_from(program, about, &spec, std::env::args_os())
        .unwrap_or_else(|e| e.exit());
    if args.flag("print_cmd") {
        print!("{}", args.to_command_line());
        return Err(ExitCode::SUCCESS);
    }
    Ok(args)
}

fn bad(msg: impl Into<String>) -> EngineError {
    EngineError::Settings(msg.into())
}

/// `name` as a positive count, or an error naming the flag.
pub fn positive(args: &ResolvedArgs, name: &str) -> Result<usize, EngineError> {
    match args.int(name) {
        Some(v) if v > 0 => Ok(v as usize),
        Some(v) => Err(bad(format!("--{name} {v}: must be a positive integer"))),
        None => Err(bad(format!("--{name} is required"))),
    }
}

/// The engine settings: the FleetX `Engine` section (`section`, from `-c` / `-o`) first, then
/// the standard flags (the ones every `run_<model>` spec has) on top — every flag the user typed wins; without a config the flags'
/// defaults apply. `--autocast` asks for AMP; its dtype is settled once the device is open.
pub fn settings_from_args(
    args: &ResolvedArgs,
    section: Option<&EngineConfig>,
) -> Result<EngineSettings, EngineError> {
    let from_config = section.is_some();
    let mut s = match section {
        Some(cfg) => EngineSettings::from_fleetx(cfg)?,
        None => EngineSettings::default(),
    };
    let wins = |name: &str| args.is_explicit(name) || !from_config;
    if wins("step") {
        s.max_steps = match args.int("step") {
            Some(-1) | None => None,
            Some(n) if n > 0 => Some(n as u64),
            Some(n) => {
                return Err(bad(format!(
                    "--step {n}: must be -1 (whole epochs) or a positive number of iterations"
                )))
            }
        };
    }
    if wins("epoch") {
        s.num_train_epochs = positive(args, "epoch")? as u64;
    }
    if wins("output_dir") {
        s.ckpt_dir = output_dir(args, section).join("checkpoints");
    }
    if let Some(r) = args.path("resume") {
        s.resume = Some(r.to_path_buf());
    }
    s.seed = args.int("seed").unwrap_or(42) as u64;
    if args.flag("autocast") {
        s.precision = Precision::Amp {
            dtype: Kind::Half,
            loss_scale: None,
        };
    }
    s.rank = dllogger::rank_from_env().unwrap_or(0) as i64;
    Ok(s)
}

/// Where logs and checkpoints go: `--output_dir` when typed (or when there is no config),
/// else the config's `Engine.save_load.output_dir`.
pub fn output_dir(args: &ResolvedArgs, cfg: Option<&EngineConfig>) -> PathBuf {
    match cfg {
        Some(c) if !args.is_explicit("output_dir") => c.save_load.output_dir.clone(),
        _ => args
            .path("output_dir")
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("./output")),
    }
}

/// Settle the AMP dtype once the device is known: `amp_dtype` `fp16` / `bf16`, or the
/// device's default; fp16 gets dynamic loss scaling from 65536.
pub fn settle_amp(settings: &mut EngineSettings, amp_dtype: &str, device_default: Kind) {
    if let Precision::Amp { .. } = settings.precision {
        let dtype = match amp_dtype {
            "fp16" => Kind::Half,
            "bf16" => Kind::BFloat16,
            _ => device_default,
        };
        settings.precision = Precision::Amp {
            dtype,
            loss_scale: (dtype == Kind::Half).then_some(65536.0),
        };
    }
}

/// The JSON metric stream of a run: `<output_dir>/<model_name>_log.json`.
pub fn log_path(output_dir: &Path, model_name: &str) -> PathBuf {
    output_dir.join(format!("{model_name}_log.json"))
}

/// dllogger as the engine's metric sink: `rank` as an integer, everything else as floats.
pub struct DlloggerSink<'a>(pub &'a mut Logger);

impl MetricSink for DlloggerSink<'_> {
    fn metadata(&mut self, name: &str, unit: &str, goal: &str, stage: &str) {
        self.0.metadata(
            name,
            Metadata::new()
                .with_unit(unit)
                .with_goal(goal)
                .with_stage(stage),
        );
    }
    fn log(&mut self, epoch: u64, iteration: u64, metrics: &[(&str, f64)]) {
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
        self.0.log((epoch, iteration), &values, Verbosity::Default);
    }
}

/// The useful part of a libtorch error carried by a tch panic: its message without the C++
/// stack and the dispatcher's list of backends.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    let raw = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("unknown error");
    let first = raw
        .split("\\n")
        .next()
        .unwrap_or(raw)
        .lines()
        .next()
        .unwrap_or("")
        .trim();
    let cut = first
        .find(" is only available for these backends")
        .map_or(first, |i| &first[..i]);
    cut.chars().take(600).collect()
}
