//! `--dump`: a precision dump of one training step (docs/diff.md). The engine starts a
//! dispatcher capture ([`device_sdaa::capture`]) before the forward of the chosen step and
//! ends it after that step's backward, before the optimizer step; the tensors go to
//! [`device_sdaa::dump::DumpWriter`] under `DIR/rank<r>/step<N>/`. With `--dump_dtype fp64`
//! the whole run is the float64 CPU arbiter ([`Fp64Device`]).

use std::path::PathBuf;

use device_sdaa::capture::{Capture, StepScope};
use device_sdaa::dump::{self, DumpWriter, Meta};
use tch::{nn::VarStore, Kind, Tensor};

use crate::{EngineError, TrainDevice};

/// What a dump records (`--dump_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpLevel {
    /// Every outermost aten op call, with its module scope.
    Op,
    /// Each module's forward input and output.
    Module,
    /// Both.
    Mix,
}

impl DumpLevel {
    /// The `level` of meta.json.
    pub fn name(self) -> &'static str {
        match self {
            DumpLevel::Op => "op",
            DumpLevel::Module => "module",
            DumpLevel::Mix => "mix",
        }
    }
}

impl std::str::FromStr for DumpLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "op" => Ok(DumpLevel::Op),
            "module" => Ok(DumpLevel::Module),
            "mix" => Ok(DumpLevel::Mix),
            other => Err(format!("--dump_level {other:?}: valid: op, module, mix")),
        }
    }
}

/// The `--dump*` arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct DumpSettings {
    /// The dump root (`--dump`).
    pub dir: PathBuf,
    /// The 1-based optimizer step dumped (`--dump_step`).
    pub step: u64,
    pub level: DumpLevel,
    /// Write every tensor as .npy too (`--dump_tensors full`).
    pub full: bool,
    /// The run is the float64 CPU arbiter (`--dump_dtype fp64`).
    pub fp64: bool,
    /// The model's name in meta.json.
    pub model: String,
}

/// Refuse, before training, a dump that cannot happen: its step is outside the run, its
/// directory already holds this rank's step (a dump never overwrites one) or cannot be
/// created.
pub(crate) fn check(
    d: &Option<DumpSettings>,
    rank: u32,
    start_step: u64,
    total: u64,
) -> Result<(), EngineError> {
    let Some(d) = d else { return Ok(()) };
    if d.step <= start_step || d.step > total {
        return Err(EngineError::Settings(format!(
            "--dump_step {}: this run trains steps {} to {total}; choose a step among them",
            d.step,
            start_step + 1
        )));
    }
    dump::check_unused(&d.dir, rank, d.step).map_err(|e| EngineError::Settings(e.to_string()))?;
    let rank_dir = d.dir.join(format!("rank{rank}"));
    std::fs::create_dir_all(&rank_dir).map_err(|e| {
        EngineError::Settings(format!(
            "--dump {}: cannot create {}: {e}",
            d.dir.display(),
            rank_dir.display()
        ))
    })
}

/// A step being dumped: the capture and the `modelzoo::step` scope around it.
pub(crate) struct StepDump {
    // Field order is drop order: the step scope closes before the capture stops.
    scope: StepScope,
    capture: Capture<DumpWriter>,
    meta: Meta,
}

fn failed(e: impl std::fmt::Display) -> EngineError {
    EngineError::Dump(e.to_string())
}

/// Start dumping when `step` (1-based) is the one asked for.
pub(crate) fn begin_if_due(
    d: &Option<DumpSettings>,
    step: u64,
    rank: u32,
    device: &dyn TrainDevice,
    vars: &[(String, Tensor)],
) -> Result<Option<StepDump>, EngineError> {
    let Some(d) = d.as_ref().filter(|d| d.step == step) else {
        return Ok(None);
    };
    let writer = DumpWriter::create(&d.dir, rank, step, d.full).map_err(|e| match e {
        dump::DumpError::Exists { .. } => EngineError::Settings(e.to_string()),
        e => failed(e),
    })?;
    let dtype = vars
        .iter()
        .find(|(_, t)| t.is_floating_point())
        .map(|(_, t)| kind_name(t.kind()).to_string());
    let meta = Meta {
        format: dump::FORMAT,
        version: dump::VERSION,
        framework: "modelzoo",
        model: d.model.clone(),
        step,
        rank,
        level: d.level.name().into(),
        tensors: if d.full { "full" } else { "stats" }.into(),
        dtype,
        device: device.label(),
        torch_version: device_sdaa::cuda::torch_version(),
    };
    let ops = d.level != DumpLevel::Module;
    let modules = d.level != DumpLevel::Op;
    // Full dumps write every record's tensor; statistics need each tensor once.
    let capture = Capture::start(writer, ops, modules, !d.full).map_err(failed)?;
    let scope = StepScope::open().map_err(failed)?;
    Ok(Some(StepDump {
        scope,
        capture,
        meta,
    }))
}

impl StepDump {
    /// Stop capturing and write meta.json: the dump is complete.
    pub(crate) fn end(self) -> Result<PathBuf, EngineError> {
        let StepDump {
            scope,
            capture,
            meta,
        } = self;
        drop(scope);
        let writer = capture.finish().map_err(failed)?;
        let dir = writer.finish(&meta).map_err(failed)?;
        tracing::info!("dump of step {} written to {}", meta.step, dir.display());
        Ok(dir)
    }
}

/// PyTorch's name of a dtype (`float32`).
fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Half => "float16",
        Kind::BFloat16 => "bfloat16",
        Kind::Double => "float64",
        _ => "float32",
    }
}

/// `--dump_dtype fp64`: the device, with the model and every floating input in float64 and no
/// autocast, so the run is the high-precision reference the other dumps are judged against.
pub struct Fp64Device<'a>(pub &'a dyn TrainDevice);

impl TrainDevice for Fp64Device<'_> {
    fn label(&self) -> String {
        self.0.label()
    }
    fn to_device(&self, t: &Tensor) -> Tensor {
        let t = self.0.to_device(t);
        if t.is_floating_point() {
            t.to_kind(Kind::Double)
        } else {
            t
        }
    }
    fn to_cpu(&self, t: &Tensor) -> Tensor {
        self.0.to_cpu(t)
    }
    fn move_var_store(&self, vs: &mut VarStore) -> Result<(), String> {
        self.0.move_var_store(vs)?;
        vs.double();
        Ok(())
    }
    fn autocast_with(&self, _enabled: bool, _dtype: Kind, f: &mut dyn FnMut() -> Tensor) -> Tensor {
        f()
    }
    fn default_amp_dtype(&self) -> Kind {
        Kind::Double
    }
    fn manual_seed(&self, seed: u64) {
        self.0.manual_seed(seed)
    }
    fn synchronize(&self) {
        self.0.synchronize()
    }
    fn memory_info(&self) -> Option<(u64, u64)> {
        self.0.memory_info()
    }
}

/// `t` in at least float32: half types widen, float64 (the fp64 arbiter) stays float64.
pub fn at_least_f32(t: &Tensor) -> Tensor {
    match t.kind() {
        Kind::Double => t.shallow_clone(),
        _ => t.to_kind(Kind::Float),
    }
}

/// The `--dump*` standard arguments: `None` without `--dump`. Refused (exit 2): a `--dump_*`
/// option without `--dump`, and `--dump_dtype fp64` with `--autocast` or off the CPU (the
/// arbiter is float64 on the CPU by definition).
pub fn from_args(
    std: &run_scripts_template::StandardArgs,
) -> Result<Option<DumpSettings>, EngineError> {
    let bad = |m: String| Err(EngineError::Settings(m));
    let typed = &std.explicit;
    let Some(dir) = &std.dump else {
        let options = [
            ("dump_step", typed.dump_step),
            ("dump_level", typed.dump_level),
            ("dump_tensors", typed.dump_tensors),
            ("dump_dtype", typed.dump_dtype),
        ];
        return match options.iter().find(|(_, given)| *given) {
            Some((o, _)) => bad(format!(
                "--{o} needs --dump DIR (where the dump is written)"
            )),
            None => Ok(None),
        };
    };
    let step = match std.dump_step {
        n if n >= 1 => n as u64,
        n => return bad(format!("--dump_step {n}: steps count from 1")),
    };
    let level = std.dump_level.parse().map_err(EngineError::Settings)?;
    let full = match std.dump_tensors.as_str() {
        "stats" => false,
        "full" => true,
        other => return bad(format!("--dump_tensors {other:?}: valid: stats, full")),
    };
    let fp64 = match std.dump_dtype.as_deref() {
        None => false,
        Some("fp64") => true,
        Some(other) => return bad(format!("--dump_dtype {other:?}: valid: fp64")),
    };
    if fp64 && std.autocast {
        return bad("--dump_dtype fp64 runs the model in float64: drop --autocast".into());
    }
    let device = &std.device;
    if fp64 && device != "cpu" {
        return bad(format!(
            "--dump_dtype fp64 is the float64 reference on the CPU: use --device cpu, not {device}"
        ));
    }
    Ok(Some(DumpSettings {
        dir: dir.clone(),
        step,
        level,
        full,
        fp64,
        model: std.model_name.clone().unwrap_or_else(|| "model".into()),
    }))
}
