//! `modelzoo port`: the porter's loop on one machine. A CUDA PyTorch project is migrated
//! (`migrate`) into a new directory, the original runs on the baseline device (CUDA where a GPU
//! is present, else the CPU through a CUDA-on-CPU shim, `python/port/sitecustomize.py`) and the
//! port runs on SDAA (a card, else the SDAA emulator's `torch_sdaa`), the same command in
//! each. Every run happens in a fresh copy in the port's work directory, so the user's project
//! is never written. An fp32 CPU baseline runs twice and the port is judged step by step
//! against it ([`steps`]); AMP runs, CUDA baselines and `--baseline-log` are judged by the 1%
//! rule on the final value (`validator::compare`). `PORT.md` / `port.json` say what happened:
//! the verdict, the rule, the runs, the figures, every rewrite, what the migration left to a
//! person, and what ran on the device (the emulator's op inventory, fp64).

mod copy;
pub mod losses;
mod md;
mod report;
pub mod steps;
pub mod trace;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime};

use modelzoo_support::kit::{python_path_with, Kit};
use modelzoo_support::process::{self, Job, RunOutcome};
use serde::{Deserialize, Serialize};
use validator::compare;

pub use report::{render_markdown, JSON_FILE, MARKDOWN_FILE};

/// The directory of a port's own files (the runs and their output, the op inventory, the
/// shim, the saved baseline), inside the migrated directory.
pub const WORK_DIR: &str = ".modelzoo-port";

/// What `--recheck` reads back: the first port's settings and the original's judged runs.
pub const SAVED_FILE: &str = "baseline.json";

/// The port's run-time shim (the CPU baseline's CUDA-on-CPU mapping, the backward losses),
/// written into the work directory and put first on every run's PYTHONPATH.
const CPU_SHIM: &str = include_str!("../../python/port/sitecustomize.py");

/// The metric the shim records every backward() loss under.
pub const BACKWARD_METRIC: &str = "backward.loss";

/// Where the original runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BaselineDevice {
    /// The script as it is, on the machine's GPU.
    Cuda,
    /// The script as it is, its CUDA calls mapped to the CPU (no GPU needed).
    Cpu,
}

impl BaselineDevice {
    /// CUDA when the machine has an NVIDIA GPU (the driver lists one), else the CPU.
    pub fn detect() -> BaselineDevice {
        let gpus = std::fs::read_dir("/proc/driver/nvidia/gpus")
            .map(|d| d.flatten().count())
            .unwrap_or(0);
        if gpus > 0 {
            BaselineDevice::Cuda
        } else {
            BaselineDevice::Cpu
        }
    }
}

/// What to port and how to run it.
#[derive(Debug, Clone)]
pub struct Options {
    pub src: PathBuf,
    pub out: PathBuf,
    pub baseline_device: BaselineDevice,
    /// Longest each run may take.
    pub timeout: Duration,
    /// The log file the command writes, relative to the directory it runs in; None: read the
    /// losses from its console output.
    pub log: Option<PathBuf>,
    /// The loss to judge when a log has several (`--loss-key`).
    pub loss_key: Option<String>,
    /// A log of a real CUDA run of the same command: the original is not run, the port is
    /// judged against this by the 1% rule.
    pub baseline_log: Option<PathBuf>,
    /// The training command, run as is (no shell) in the original and in the port.
    pub command: Vec<String>,
    /// The kit's Python environment and emulator (`Kit::locate`).
    pub kit: Option<Kit>,
}

/// Why a port could not start (exit 2): nothing was run.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error("{}: {message}", path.display())]
    Input { path: PathBuf, message: String },
    #[error("no command to run: give it after `--`, e.g. `modelzoo port SRC --out DST -- python train.py --epochs 1`")]
    NoCommand,
    #[error("copying {}: {message}", path.display())]
    Copy { path: PathBuf, message: String },
    #[error("migrating {}: {source}", path.display())]
    Migrate {
        path: PathBuf,
        source: migrate::MigrateError,
    },
    #[error("writing the report {}: {message}", path.display())]
    Report { path: PathBuf, message: String },
}

/// How a port ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The port ran to the end on SDAA and matches the original within the rule.
    Pass,
    /// The port ran to the end on SDAA, but its losses left the original's.
    Drift,
    /// The port ran to the end on SDAA, but logged a different number of steps (or other
    /// steps) than the original: the losses cannot be compared step by step.
    StepsDiffer,
    /// The port crashed, timed out or was killed.
    Crash,
    /// The port ran, but no record of the device runtime shows anything ran on SDAA.
    NotOnSdaa,
    /// The port ran, but logged no loss the original logged.
    NoCandidateLoss,
    /// The original itself does not run: fix it first (the port was not run).
    BaselineFailed,
    /// The kit's CPU baseline (the shim mapping CUDA to the CPU) failed, not the original.
    KitBaselineFailed,
    /// The original's two runs differ from the first step: it is not reproducible, so the port
    /// cannot be judged step by step.
    NotReproducible,
    /// The original ran but no loss could be found in what it wrote.
    NoBaselineLoss,
    /// Interrupted by the user.
    Interrupted,
}

impl Verdict {
    /// 0 pass; 1 the port failed (crash, drift, nothing on sdaa, no comparable loss); 2 could
    /// not judge (the original or the kit's baseline failed, not reproducible, no loss in the
    /// original); 130 interrupted.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Drift
            | Verdict::StepsDiffer
            | Verdict::Crash
            | Verdict::NotOnSdaa
            | Verdict::NoCandidateLoss => 1,
            Verdict::BaselineFailed
            | Verdict::KitBaselineFailed
            | Verdict::NotReproducible
            | Verdict::NoBaselineLoss => 2,
            Verdict::Interrupted => 130,
        }
    }
}

/// One run of the command.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    /// `cuda`, `cpu (...)`, `sdaa (emulator)`, `sdaa (no record of the device runtime)`.
    pub device: String,
    /// The fresh copy it ran in (under the work directory).
    pub dir: PathBuf,
    /// Its stdout and stderr.
    pub console: PathBuf,
    /// `exit 0`, `exit 1`, `killed by signal 9`, `timed out after 600 s`, ...
    pub outcome: String,
    pub exit_code: Option<i32>,
    pub seconds: f64,
    /// Where its losses were read, the metrics and how many rank-0 values.
    pub loss_log: Option<PathBuf>,
    #[serde(default)]
    pub loss_metrics: Vec<String>,
    pub steps: usize,
    /// Why no loss was found.
    pub loss_error: Option<String>,
    /// The last lines of its output.
    pub tail: Vec<String>,
    /// Where it crashed in the project, when it did.
    pub crash: Option<CrashSite>,
    /// What a `Torch-SDAA` version row in its console said (shown, never taken as proof).
    #[serde(default)]
    pub banner: Option<String>,
    /// The fault injection of the emulator (`SDAA_EMU_PERTURB`) it ran under.
    #[serde(default)]
    pub fault_injection: Option<String>,
}

/// A crash in the project's code, mapped back to the original source.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CrashSite {
    #[serde(flatten)]
    pub crash: trace::Crash,
    /// The frame's file relative to the directory that ran.
    pub file: PathBuf,
    /// The same place in the original (the migrated line it came from).
    pub original_line: Option<usize>,
    pub original_code: Option<String>,
}

/// A rewrite migrate made: file, changed lines, rewrites per rule.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rewrite {
    pub file: PathBuf,
    pub lines: String,
    pub rules: String,
}

/// What a person must still look at, located in the migrated file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    pub file: PathBuf,
    pub line: usize,
    pub rule: String,
    pub message: String,
}

/// What ran on the device, from the emulator's op inventory (rank 0), written in this run.
#[derive(Debug, Clone, Serialize)]
pub struct Inventory {
    pub file: PathBuf,
    pub device_ops: usize,
    pub device_calls: u64,
    pub host_ops: usize,
    pub fp64_device: Vec<(String, u64)>,
    pub emulator_fallbacks: Vec<String>,
    pub coverage_rate: f64,
    /// The ModelZoo-form coverage file beside it.
    pub coverage_txt: PathBuf,
}

/// The rule the port was judged by, and why that one.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RuleUsed {
    /// `step-by-step` or `rel1` (1% on the mean of the last 10 steps).
    pub name: String,
    pub why: String,
}

/// What the migration did, kept for `--recheck`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Migration {
    pub files_copied: usize,
    pub not_copied: Vec<(PathBuf, String)>,
    /// Symlinks that point outside the project, kept as they are in every copy.
    pub links_outside: Vec<(PathBuf, PathBuf)>,
    /// Symlinks into the project, re-pointed into each copy (path, original target).
    pub links_repointed: Vec<(PathBuf, PathBuf)>,
    pub rewrites: Vec<Rewrite>,
    pub findings: Vec<Finding>,
}

/// Everything a port found; `port.json` is this, `PORT.md` its rendering.
#[derive(Debug, Clone, Serialize)]
pub struct Port {
    pub format: &'static str,
    pub version: u32,
    pub verdict: Verdict,
    pub exit_code: u8,
    /// One sentence: why this verdict, and what to do next.
    pub summary: String,
    /// This report re-judged an edited port (`--recheck`).
    pub recheck: bool,
    pub src: PathBuf,
    pub out: PathBuf,
    pub command: Vec<String>,
    #[serde(flatten)]
    pub migration: Migration,
    /// The original's run (the first of two for a step-by-step verdict).
    pub baseline: Run,
    /// The original's second run (step-by-step verdicts only).
    pub baseline_second: Option<Run>,
    pub candidate: Option<Run>,
    /// Where the losses came from when the script printed none.
    pub loss_note: Option<String>,
    pub rule: Option<RuleUsed>,
    /// Step by step, per metric.
    pub steps: Vec<steps::Judged>,
    /// The ModelZoo's 1% rule on the final value (the acceptance figure), first metric judged.
    pub compare: Option<compare::Comparison>,
    /// The compare's figures as text (`modelzoo compare`'s own), every metric.
    #[serde(skip)]
    pub compare_text: Option<String>,
    pub inventory: Option<Inventory>,
}

/// What a port saves for `--recheck` (`.modelzoo-port/baseline.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Saved {
    format: String,
    src: PathBuf,
    command: Vec<String>,
    log: Option<PathBuf>,
    loss_key: Option<String>,
    timeout_s: u64,
    baseline_device: BaselineDevice,
    baseline_log: Option<PathBuf>,
    migration: Migration,
    baseline: Run,
    baseline_second: Option<Run>,
    loss_note: Option<String>,
    /// The losses came from the shim's backward records.
    backward: bool,
    rule: RuleUsed,
    /// The original's series (first run) and the noise its two runs measured, per metric.
    series: Vec<steps::Series>,
    noise: BTreeMap<String, f64>,
}

const SAVED_FORMAT: &str = "modelzoo-port-baseline/1";

/// Migrate `opts.src` into `opts.out`, run both sides, compare, and write `PORT.md` and
/// `port.json` into `opts.out`. Err: unusable input, nothing was run.
pub fn run(opts: &Options, cancel: &AtomicBool) -> Result<Port, PortError> {
    let src = check_inputs(opts)?;
    std::fs::create_dir_all(&opts.out).map_err(|e| PortError::Input {
        path: opts.out.clone(),
        message: format!("cannot create it: {e}"),
    })?;
    let out = opts.out.canonicalize().map_err(|e| PortError::Input {
        path: opts.out.clone(),
        message: e.to_string(),
    })?;
    let copied = copy::copy_tree(&src, &out, &[])?;
    let migrate_err = |source| PortError::Migrate {
        path: out.clone(),
        source,
    };
    let scan = migrate::scan(&out).map_err(migrate_err)?;
    let written = migrate::write(&scan).map_err(migrate_err)?;
    let work = out.join(WORK_DIR);
    fresh_dir(&work)?;

    let migration = Migration {
        files_copied: copied.files,
        not_copied: copied
            .not_copied
            .into_iter()
            .map(|(p, why)| (p, why.to_string()))
            .collect(),
        links_outside: copied.links_outside,
        links_repointed: copied.links_repointed,
        rewrites: scan
            .changes
            .iter()
            .map(|c| Rewrite {
                file: c.path.clone(),
                lines: c.changed_lines.clone(),
                rules: c
                    .rewrites
                    .iter()
                    .map(|(r, n)| format!("{r}×{n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
            .collect(),
        findings: written
            .report
            .findings
            .iter()
            .map(|f| Finding {
                file: f.path.clone(),
                line: f.line,
                rule: f.rule.to_string(),
                message: f.message.clone(),
            })
            .collect(),
    };
    let mut port = Port {
        format: "modelzoo-port",
        version: 2,
        verdict: Verdict::Pass,
        exit_code: 0,
        summary: String::new(),
        recheck: false,
        src: src.clone(),
        out: out.clone(),
        command: opts.command.clone(),
        migration,
        baseline: Run::empty(),
        baseline_second: None,
        candidate: None,
        loss_note: None,
        rule: None,
        steps: Vec::new(),
        compare: None,
        compare_text: None,
        inventory: None,
    };
    let ctx = Ctx {
        src: src.clone(),
        out: out.clone(),
        work: work.clone(),
        command: opts.command.clone(),
        log: opts.log.clone(),
        loss_key: opts.loss_key.clone(),
        timeout: opts.timeout,
        baseline_device: opts.baseline_device,
        kit: opts.kit.clone(),
    };
    write_shim(&work)?;

    let saved = match judge_original(&mut port, &ctx, opts, cancel)? {
        Ok(saved) => saved,
        Err(verdict) if port.baseline.ran_to_the_end() && port.baseline.loss_log.is_some() => {
            // The original ran and logged losses that cannot be judged against (not
            // reproducible, or never moving): the port still runs, so the report says whether
            // it runs on sdaa at all.
            let verdict = run_unjudged_candidate(&mut port, &ctx, verdict, &scan, cancel)?;
            return finish(port, verdict, &out);
        }
        Err(verdict) => return finish(port, verdict, &out),
    };
    let json = serde_json::to_vec_pretty(&saved).map_err(|e| PortError::Report {
        path: work.join(SAVED_FILE),
        message: e.to_string(),
    })?;
    modelzoo_support::write_atomic(&work.join(SAVED_FILE), &json).map_err(|e| {
        PortError::Report {
            path: work.join(SAVED_FILE),
            message: e.to_string(),
        }
    })?;
    let verdict = run_and_judge_candidate(&mut port, &ctx, &saved, Some(&scan), cancel)?;
    finish(port, verdict, &out)
}

/// `modelzoo port --recheck DST`: run the candidate again on the (edited) port `dst` with the
/// first port's command, loss key, timeout and the original's saved runs, and judge it again.
/// Nothing is migrated again and nothing in `dst` but its report and work directory is
/// written.
pub fn recheck(dst: &Path, kit: Option<Kit>, cancel: &AtomicBool) -> Result<Port, PortError> {
    let input = |path: &Path, message: String| PortError::Input {
        path: path.to_path_buf(),
        message,
    };
    if !dst.is_dir() {
        return Err(input(
            dst,
            "not a directory: give the --out directory of an earlier `modelzoo port`".into(),
        ));
    }
    let out = dst.canonicalize().map_err(|e| input(dst, e.to_string()))?;
    let work = out.join(WORK_DIR);
    let saved_path = work.join(SAVED_FILE);
    let meta = std::fs::symlink_metadata(&saved_path);
    if !meta.as_ref().is_ok_and(|m| m.is_file()) {
        return Err(input(
            &saved_path,
            format!(
                "{}: this is not a port whose original was judged (no saved baseline); port it with `modelzoo port SRC --out DST -- CMD` first — a port whose original failed has nothing to recheck against",
                if meta.is_ok() { "not a regular file" } else { "missing" }
            ),
        ));
    }
    let saved: Saved = std::fs::read(&saved_path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        .map_err(|e| {
            input(
                &saved_path,
                format!("cannot read the saved baseline: {e}; port again"),
            )
        })?;
    if saved.format != SAVED_FORMAT {
        return Err(input(
            &saved_path,
            format!(
                "written by another version of modelzoo port ({}): port again",
                saved.format
            ),
        ));
    }
    let ctx = Ctx {
        src: saved.src.clone(),
        out: out.clone(),
        work: work.clone(),
        command: saved.command.clone(),
        log: saved.log.clone(),
        loss_key: saved.loss_key.clone(),
        timeout: Duration::from_secs(saved.timeout_s),
        baseline_device: saved.baseline_device,
        kit,
    };
    write_shim(&work)?;
    let mut port = Port {
        format: "modelzoo-port",
        version: 2,
        verdict: Verdict::Pass,
        exit_code: 0,
        summary: String::new(),
        recheck: true,
        src: saved.src.clone(),
        out: out.clone(),
        command: saved.command.clone(),
        migration: saved.migration.clone(),
        baseline: saved.baseline.clone(),
        baseline_second: saved.baseline_second.clone(),
        candidate: None,
        loss_note: saved.loss_note.clone(),
        rule: Some(saved.rule.clone()),
        steps: Vec::new(),
        compare: None,
        compare_text: None,
        inventory: None,
    };
    let verdict = run_and_judge_candidate(&mut port, &ctx, &saved, None, cancel)?;
    finish(port, verdict, &out)
}

/// What every run of one port shares.
struct Ctx {
    src: PathBuf,
    out: PathBuf,
    work: PathBuf,
    command: Vec<String>,
    log: Option<PathBuf>,
    loss_key: Option<String>,
    timeout: Duration,
    baseline_device: BaselineDevice,
    kit: Option<Kit>,
}

fn fresh_dir(dir: &Path) -> Result<(), PortError> {
    let io = |e: std::io::Error| PortError::Input {
        path: dir.to_path_buf(),
        message: format!("cannot make it afresh: {e}"),
    };
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {
            if std::fs::remove_dir_all(dir).is_err() {
                // A copied read-only directory: make the copies' directories writable first.
                use std::os::unix::fs::PermissionsExt;
                for entry in walkdir::WalkDir::new(dir)
                    .follow_links(false)
                    .into_iter()
                    .flatten()
                {
                    if entry.file_type().is_dir() {
                        let _ = std::fs::set_permissions(
                            entry.path(),
                            std::fs::Permissions::from_mode(0o755),
                        );
                    }
                }
                std::fs::remove_dir_all(dir).map_err(io)?;
            }
        }
        Ok(_) => std::fs::remove_file(dir).map_err(io)?,
        Err(_) => {}
    }
    std::fs::create_dir_all(dir).map_err(io)
}

fn write_shim(work: &Path) -> Result<(), PortError> {
    let shim = work.join("shim");
    std::fs::create_dir_all(&shim)
        .and_then(|()| {
            modelzoo_support::write_atomic(&shim.join("sitecustomize.py"), CPU_SHIM.as_bytes())
        })
        .map_err(|e| PortError::Input {
            path: shim.clone(),
            message: format!("cannot write the port's shim: {e}"),
        })
}

/// The original: run (or read from `--baseline-log`), judged usable, the rule chosen, and for
/// a step-by-step verdict run a second time and checked reproducible. Ok(Err(verdict)): the
/// port cannot be judged, the candidate is not run.
fn judge_original(
    port: &mut Port,
    ctx: &Ctx,
    opts: &Options,
    cancel: &AtomicBool,
) -> Result<Result<Saved, Verdict>, PortError> {
    let mut saved = Saved {
        format: SAVED_FORMAT.into(),
        src: ctx.src.clone(),
        command: ctx.command.clone(),
        log: ctx.log.clone(),
        loss_key: ctx.loss_key.clone(),
        timeout_s: ctx.timeout.as_secs(),
        baseline_device: ctx.baseline_device,
        baseline_log: opts.baseline_log.clone(),
        migration: port.migration.clone(),
        baseline: Run::empty(),
        baseline_second: None,
        loss_note: None,
        backward: false,
        rule: RuleUsed {
            name: String::new(),
            why: String::new(),
        },
        series: Vec::new(),
        noise: BTreeMap::new(),
    };
    if let Some(log) = &opts.baseline_log {
        let log = log.canonicalize().unwrap_or_else(|_| log.clone());
        let mut run = Run::empty();
        run.device = "cuda (a log of a real CUDA run, --baseline-log)".into();
        run.dir = log.parent().map(Path::to_path_buf).unwrap_or_default();
        run.console = log.clone();
        run.outcome = "not run: read from --baseline-log".into();
        run.exit_code = Some(0);
        match find_loss(&run.dir, &log, None, ctx.loss_key.as_deref()) {
            Ok(found) => {
                run.loss_log = Some(found.path);
                run.loss_metrics = found.metrics;
                run.steps = found.values;
            }
            Err(why) => run.loss_error = Some(why),
        }
        port.baseline = run;
        if let Some(why) = port.baseline.loss_error.clone() {
            port.summary =
                format!("no loss in the --baseline-log file: {why}; the port was not run");
            return Ok(Err(Verdict::NoBaselineLoss));
        }
        saved.rule = RuleUsed {
            name: "rel1".into(),
            why: "the baseline is a log of a CUDA run (--baseline-log): other kernels (and TF32) differ from the CPU's at every step, so the port is judged by the ModelZoo's 1% rule on the final value".into(),
        };
    } else {
        let first = run_side(ctx, Side::Baseline, "baseline", cancel)?;
        port.baseline = first;
        if let Some(verdict) = judge_baseline_run(port, ctx, false) {
            return Ok(Err(verdict));
        }
        let autocast = read_autocast(&ctx.work.join("backward").join("baseline"));
        saved.rule = match (ctx.baseline_device, autocast) {
            (BaselineDevice::Cuda, _) => RuleUsed {
                name: "rel1".into(),
                why: "the original ran on CUDA: its kernels (and TF32) differ from the CPU kernels the emulator runs at every step, so the port is judged by the ModelZoo's 1% rule on the final value".into(),
            },
            (BaselineDevice::Cpu, true) => RuleUsed {
                name: "rel1".into(),
                why: "the original trains under autocast (AMP, as the shim recorded): fp16/bf16 kernels are not the same computation on both sides step for step, so the port is judged by the ModelZoo's 1% rule on the final value".into(),
            },
            (BaselineDevice::Cpu, false) => RuleUsed {
                name: "step-by-step".into(),
                why: "fp32 CPU baseline: the emulator runs the CPU's kernels, so a faithful port matches its original at every step to float noise; the original ran twice to measure that noise".into(),
            },
        };
    }
    port.rule = Some(saved.rule.clone());
    // The series the port is judged against.
    let metrics = port.baseline.loss_metrics.clone();
    let Some(path) = port.baseline.loss_log.clone() else {
        unreachable_loss(port);
        return Ok(Err(Verdict::NoBaselineLoss));
    };
    for metric in &metrics {
        match steps::Series::read(&path, metric) {
            Ok(s) => saved.series.push(s),
            Err(why) => {
                port.summary =
                    format!("the original's losses cannot be read: {why}; the port was not run");
                return Ok(Err(Verdict::NoBaselineLoss));
            }
        }
    }
    if saved
        .series
        .iter()
        .all(|s| s.points.iter().all(|p| p.value == 0.0))
    {
        port.summary = format!(
            "the original's loss ({}) is 0 at every step: a loss that never moves cannot show whether the port computes the same (a cross-entropy over one class is always 0); log the loss training minimizes (pick it with --loss-key NAME) and port again; the port was not run",
            metrics
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(Err(Verdict::NoBaselineLoss));
    }
    saved.backward = port.loss_note.is_some();
    saved.loss_note = port.loss_note.clone();
    if saved.rule.name == "step-by-step" {
        let second = run_side(ctx, Side::Baseline, "baseline-2", cancel)?;
        port.baseline_second = Some(second);
        if let Some(verdict) = judge_baseline_run(port, ctx, true) {
            return Ok(Err(verdict));
        }
        let second = port.baseline_second.as_ref().expect("it ran");
        for first in &saved.series {
            let path = second.loss_log.clone().unwrap_or_default();
            let other = match steps::Series::read(&path, &first.metric) {
                Ok(s) => s,
                Err(why) => {
                    port.summary = format!(
                        "the original is not reproducible: its second run did not log `{}` as the first did ({why}); seed it (torch.manual_seed / --seed), give the DataLoader a seeded generator or turn shuffling off, and port again",
                        first.metric
                    );
                    return Ok(Err(Verdict::NotReproducible));
                }
            };
            match steps::reproducibility(first, &other) {
                Ok(noise) => {
                    saved.noise.insert(first.metric.clone(), noise);
                }
                Err(why) => {
                    port.summary = format!(
                        "the original is not reproducible: {why}. Two runs of the same command must compute the same losses before a port can be judged step by step: seed it (torch.manual_seed(0), or its --seed option), give its DataLoader a seeded generator (generator=torch.Generator().manual_seed(0)) or turn shuffling off, and port again; the port was not run"
                    );
                    return Ok(Err(Verdict::NotReproducible));
                }
            }
        }
    }
    saved.baseline = port.baseline.clone();
    saved.baseline_second = port.baseline_second.clone();
    Ok(Ok(saved))
}

fn unreachable_loss(port: &mut Port) {
    port.summary = "the original ran, but no loss was found; the port was not run".into();
}

/// Whether the shim recorded autocast in the original's run (rank 0).
fn read_autocast(dir: &Path) -> bool {
    std::fs::read(dir.join("meta.rank0.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["autocast"].as_bool())
        .unwrap_or(false)
}

/// Copies and runs the candidate from the port directory, then judges it.
/// Runs the candidate when the original cannot be judged against: a port that crashes or runs
/// nothing on sdaa fails (exit 1) as it would otherwise; one that runs keeps `unjudged`, and the
/// summary says it ran and that its losses were not compared.
fn run_unjudged_candidate(
    port: &mut Port,
    ctx: &Ctx,
    unjudged: Verdict,
    scan: &migrate::Report,
    cancel: &AtomicBool,
) -> Result<Verdict, PortError> {
    let why = port.summary.replace("; the port was not run", "");
    let started = SystemTime::now() - Duration::from_secs(2);
    let candidate = run_side(ctx, Side::Candidate, "candidate", cancel)?;
    port.inventory = read_inventory(&ctx.work.join("inventory"), started);
    port.candidate = Some(candidate);
    if let Some(verdict) = judge_candidate_ran(port, Some(scan)) {
        return Ok(verdict);
    }
    let c = port.candidate.as_ref().expect("the candidate ran");
    port.summary = format!(
        "{why}. The port ran to the end on {} ({:.1} s); its losses were not compared",
        c.device, c.seconds
    );
    Ok(unjudged)
}

fn run_and_judge_candidate(
    port: &mut Port,
    ctx: &Ctx,
    saved: &Saved,
    scan: Option<&migrate::Report>,
    cancel: &AtomicBool,
) -> Result<Verdict, PortError> {
    // Filesystem times can be coarser than the clock: a margin, on top of the fresh directory.
    let started = SystemTime::now() - Duration::from_secs(2);
    let candidate = run_side(ctx, Side::Candidate, "candidate", cancel)?;
    port.inventory = read_inventory(&ctx.work.join("inventory"), started);
    port.candidate = Some(candidate);
    Ok(judge_candidate(port, saved, scan))
}

/// `check_inputs` of a fresh port: SRC, `--out`, the command, `--log`, `--baseline-log`.
fn check_inputs(opts: &Options) -> Result<PathBuf, PortError> {
    if opts.command.is_empty() {
        return Err(PortError::NoCommand);
    }
    let input = |path: &Path, message: String| PortError::Input {
        path: path.to_path_buf(),
        message,
    };
    if !opts.src.is_dir() {
        return Err(input(
            &opts.src,
            "not a directory: give the project to port (the directory holding its training script)"
                .into(),
        ));
    }
    let src = opts
        .src
        .canonicalize()
        .map_err(|e| input(&opts.src, e.to_string()))?;
    if opts.out.exists() {
        let empty = std::fs::read_dir(&opts.out)
            .map_err(|e| input(&opts.out, format!("--out exists and cannot be read: {e}")))?
            .next()
            .is_none();
        if !empty {
            return Err(input(
                &opts.out,
                "--out is not empty: give a new directory (port writes the migrated project there and never overwrites files); to judge an edited port again, use `modelzoo port --recheck DST`".into(),
            ));
        }
    }
    let out_abs = absolute(&opts.out);
    if out_abs.starts_with(&src) {
        return Err(input(
            &opts.out,
            format!(
                "--out is inside the project {}: give a directory outside it",
                src.display()
            ),
        ));
    }
    if let Some(log) = &opts.log {
        if log.is_absolute()
            || log
                .components()
                .any(|c| c == std::path::Component::ParentDir)
        {
            return Err(input(
                log,
                "--log must be relative to the directory the command runs in (each side writes its own)".into(),
            ));
        }
    }
    if let Some(log) = &opts.baseline_log {
        if !std::fs::metadata(log).is_ok_and(|m| m.is_file()) {
            return Err(input(
                log,
                "--baseline-log must be a regular file: the log of a real CUDA run of the same command".into(),
            ));
        }
    }
    Ok(src)
}

/// `p` made absolute against the working directory, `..` resolved through what exists.
fn absolute(p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| p.to_path_buf(), |d| d.join(p))
    };
    // The deepest existing ancestor, canonical, with the rest appended.
    for ancestor in joined.ancestors() {
        if let Ok(canon) = ancestor.canonicalize() {
            let rest = joined.strip_prefix(ancestor).unwrap_or(Path::new(""));
            return canon.join(rest);
        }
    }
    joined
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Baseline,
    Candidate,
}

impl Run {
    fn empty() -> Run {
        Run {
            device: String::new(),
            dir: PathBuf::new(),
            console: PathBuf::new(),
            outcome: String::new(),
            exit_code: None,
            seconds: 0.0,
            loss_log: None,
            loss_metrics: Vec::new(),
            steps: 0,
            loss_error: None,
            tail: Vec::new(),
            crash: None,
            banner: None,
            fault_injection: None,
        }
    }

    fn ran_to_the_end(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Where a run's losses are (see [`losses::find`]).
struct FoundLoss {
    path: PathBuf,
    metrics: Vec<String>,
    values: usize,
}

/// The one call into the loss finder.
fn find_loss(
    dir: &Path,
    console: &Path,
    log: Option<&Path>,
    key: Option<&str>,
) -> Result<FoundLoss, String> {
    losses::find(dir, console, log, key).map(|f| FoundLoss {
        path: f.path,
        metrics: f.metrics,
        values: f.values,
    })
}

/// Runs the command once, in a fresh copy under the work directory: the original's copy is
/// made from SRC, the candidate's from the port directory. Its output goes to
/// `<work>/<label>.log`.
fn run_side(ctx: &Ctx, side: Side, label: &str, cancel: &AtomicBool) -> Result<Run, PortError> {
    let device = match (side, ctx.baseline_device) {
        (Side::Baseline, BaselineDevice::Cuda) => "cuda".to_string(),
        (Side::Baseline, BaselineDevice::Cpu) => {
            "cpu (the original's CUDA calls mapped to the CPU by the port's shim)".to_string()
        }
        (Side::Candidate, _) => "sdaa".to_string(),
    };
    // The copy: runs/<label>/<name of SRC>/, beside links to SRC's siblings.
    let runs = ctx.work.join("runs").join(label);
    fresh_dir(&runs)?;
    let name = ctx
        .src
        .file_name()
        .map_or_else(|| OsString::from("project"), |n| n.to_os_string());
    let dir = runs.join(&name);
    std::fs::create_dir(&dir).map_err(|e| PortError::Copy {
        path: dir.clone(),
        message: e.to_string(),
    })?;
    match side {
        Side::Baseline => copy::copy_tree(&ctx.src, &dir, &[])?,
        Side::Candidate => copy::copy_tree(&ctx.out, &dir, &[&ctx.src])?,
    };
    copy::link_parent_entries(&ctx.src, &ctx.out, &runs)?;

    let console = ctx.work.join(format!("{label}.log"));
    let _ = std::fs::remove_file(&console);
    let backward = ctx.work.join("backward").join(label);
    fresh_dir(&backward)?;
    let shim = ctx.work.join("shim");
    let mut env: Vec<(&str, OsString)> = vec![
        ("PYTHONUNBUFFERED", "1".into()),
        ("MODELZOO_PORT_BACKWARD_DIR", backward.into_os_string()),
    ];
    let mut remove: Vec<&str> = vec!["MODELZOO_PORT_CPU_BASELINE"];
    let kit_bin: Vec<PathBuf> = ctx.kit.iter().filter_map(Kit::venv_bin).collect();
    let emulator: Vec<PathBuf> = ctx.kit.iter().filter_map(Kit::emulator_python).collect();
    // The shim records backward()'s losses on every side; it maps CUDA only on a CPU baseline.
    let first = vec![shim];
    let mut fault_injection = None;
    match side {
        Side::Baseline if ctx.baseline_device == BaselineDevice::Cpu => {
            env.push(("MODELZOO_PORT_CPU_BASELINE", "1".into()));
            remove.clear();
            env.push(("CUDA_VISIBLE_DEVICES", "".into()));
        }
        Side::Baseline => {}
        Side::Candidate => {
            // The port must not reach a GPU by a path the migration missed.
            env.push(("CUDA_VISIBLE_DEVICES", "".into()));
            // As many emulated devices as the CPU baseline reports (torchrun's local world
            // size, else one), so a DataParallel model splits its batch alike on both sides.
            if ctx.baseline_device == BaselineDevice::Cpu
                && std::env::var_os("SDAA_EMULATOR_DEVICES").is_none()
            {
                env.push(("SDAA_EMULATOR_DEVICES", "local".into()));
            }
            let inventory = ctx.work.join("inventory");
            fresh_dir(&inventory)?;
            env.push(("SDAA_EMULATOR_OP_INVENTORY", inventory.into_os_string()));
            fault_injection = std::env::var("SDAA_EMU_PERTURB")
                .ok()
                .filter(|v| !v.trim().is_empty());
        }
    }
    if let Some(pp) = python_path_with(&first, &emulator) {
        env.push(("PYTHONPATH", pp));
    }
    let mut command = Command::new(&ctx.command[0]);
    command.args(&ctx.command[1..]).current_dir(&dir);
    if let Some(path) = process::prefixed_path(&kit_bin) {
        command.env("PATH", path);
    }
    for k in remove {
        command.env_remove(k);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    tracing::info!(side = label, dir = %dir.display(), "running {:?}", ctx.command);
    eprintln!("port: running the {label} on {device} in {}", dir.display());
    let start = Instant::now();
    let outcome = process::run(Job {
        command,
        timeout: ctx.timeout,
        console: &console,
        kill_grace: Duration::from_secs(10),
        cancel,
    });
    let seconds = start.elapsed().as_secs_f64();
    let (outcome_text, exit_code) = match &outcome {
        RunOutcome::Exited { code } => (format!("exit {code}"), Some(*code)),
        RunOutcome::Signalled { signal } => (format!("killed by signal {signal}"), None),
        RunOutcome::TimedOut => (
            format!(
                "timed out after {} s (stopped with everything it started)",
                ctx.timeout.as_secs()
            ),
            None,
        ),
        RunOutcome::Interrupted => ("interrupted".to_string(), None),
        RunOutcome::SpawnFailed(e) => (format!("could not start `{}`: {e}", ctx.command[0]), None),
    };
    let text = std::fs::read(&console)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let tail: Vec<String> = {
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..]
            .iter()
            .map(|l| l.to_string())
            .collect()
    };
    let mut run = Run {
        device,
        dir: dir.clone(),
        console: console.clone(),
        outcome: outcome_text,
        exit_code,
        seconds,
        loss_log: None,
        loss_metrics: Vec::new(),
        steps: 0,
        loss_error: None,
        tail,
        crash: None,
        banner: (side == Side::Candidate).then(|| banner(&text)).flatten(),
        fault_injection,
    };
    if outcome == RunOutcome::Interrupted {
        return Ok(run);
    }
    match find_loss(&dir, &console, ctx.log.as_deref(), ctx.loss_key.as_deref()) {
        Ok(found) => {
            run.loss_log = Some(found.path);
            run.loss_metrics = found.metrics;
            run.steps = found.values;
        }
        Err(why) => run.loss_error = Some(why),
    }
    if !run.ran_to_the_end() {
        run.crash = trace::user_crash(&text, &dir).map(|crash| {
            let file = crash
                .frame
                .file
                .strip_prefix(&dir)
                .unwrap_or(&crash.frame.file)
                .to_path_buf();
            CrashSite {
                crash,
                file,
                original_line: None,
                original_code: None,
            }
        });
    }
    Ok(run)
}

/// The shim's record of every backward() loss of a run (rank 0), when it wrote one.
fn backward_log(work: &Path, label: &str) -> Option<(PathBuf, usize)> {
    let path = work
        .join("backward")
        .join(label)
        .join("backward.rank0.jsonl");
    let series = steps::Series::read(&path, BACKWARD_METRIC).ok()?;
    Some((path, series.points.len()))
}

/// A `Torch-SDAA` version row in the console: what the banner said (shown as such, never
/// proof that anything ran on the device).
fn banner(output: &str) -> Option<String> {
    output
        .lines()
        .find(|l| l.trim_start().starts_with("Torch-SDAA"))
        .map(|l| l.trim().to_string())
}

/// The verdict when the original's run (`second`: its second run) cannot be judged against,
/// else None. A run that printed no loss is judged by the shim's backward records instead.
fn judge_baseline_run(port: &mut Port, ctx: &Ctx, second: bool) -> Option<Verdict> {
    let label = if second { "baseline-2" } else { "baseline" };
    let which = if second {
        "the original's second run"
    } else {
        "the original"
    };
    let b = if second {
        port.baseline_second.as_mut().expect("it ran")
    } else {
        &mut port.baseline
    };
    if b.outcome == "interrupted" {
        port.summary = format!("interrupted while {which} ran");
        return Some(Verdict::Interrupted);
    }
    if !b.ran_to_the_end() {
        let text = std::fs::read(&b.console)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let at = b.crash.as_ref().map_or(String::new(), |c| {
            format!(
                " at {}:{} (`{}`): {}",
                ctx.src.join(&c.file).display(),
                c.crash.frame.line,
                c.crash.frame.code.as_deref().unwrap_or(""),
                c.crash.error
            )
        });
        if ctx.baseline_device == BaselineDevice::Cpu {
            let shim = ctx.work.join("shim").join("sitecustomize.py");
            if let Some(error) = trace::kit_failure(&text, &shim) {
                let script = b.crash.as_ref().map_or(
                    " (no frame of the project's code in the traceback)".to_string(),
                    |c| {
                        format!(
                            ", called from {}:{} (`{}`)",
                            ctx.src.join(&c.file).display(),
                            c.crash.frame.line,
                            c.crash.frame.code.as_deref().unwrap_or("")
                        )
                    },
                );
                port.summary = format!(
                    "the kit's CPU baseline failed, not the original ({}): {error}{script}. The shim that runs CUDA code on the CPU (python/port/sitecustomize.py) cannot map this call; get a baseline otherwise: run port on a GPU with --baseline-device cuda, or give the log of a real CUDA run of the same command with --baseline-log FILE; the port was not run",
                    b.outcome
                );
                return Some(Verdict::KitBaselineFailed);
            }
        }
        port.summary = format!(
            "{which} does not run ({}){at}: the original is broken, not the port — fix it first; the port was not run",
            b.outcome
        );
        return Some(Verdict::BaselineFailed);
    }
    if let Some(why) = b.loss_error.clone() {
        match backward_log(&ctx.work, label) {
            Some((path, values)) if values > 0 => {
                b.loss_log = Some(path);
                b.loss_metrics = vec![BACKWARD_METRIC.to_string()];
                b.steps = values;
                b.loss_error = None;
                port.loss_note = Some(format!(
                    "the script prints no loss ({why}), so the losses judged are the ones backward() saw, recorded by the port's shim (`{BACKWARD_METRIC}`, one value per backward call)"
                ));
            }
            _ => {
                port.summary = format!("{which} ran, but {why}; the port was not run");
                return Some(Verdict::NoBaselineLoss);
            }
        }
    }
    if second {
        let first = port.baseline.loss_metrics.clone();
        let b = port.baseline_second.as_ref().expect("it ran");
        if b.loss_metrics != first {
            port.summary = format!(
                "the original is not reproducible: its first run logged {:?}, its second {:?}; port again once two runs log the same",
                first, b.loss_metrics
            );
            return Some(Verdict::NotReproducible);
        }
    }
    None
}

/// The verdicts that need no losses: interrupted, crashed, nothing on sdaa (the op inventory of
/// this run is the only proof). None: it ran to the end on sdaa.
fn judge_candidate_ran(port: &mut Port, scan: Option<&migrate::Report>) -> Option<Verdict> {
    let c = port.candidate.as_mut().expect("the candidate ran");
    if c.outcome == "interrupted" {
        port.summary = "interrupted while the port ran".into();
        return Some(Verdict::Interrupted);
    }
    if !c.ran_to_the_end() {
        if let (Some(site), Some(scan)) = (c.crash.as_mut(), scan) {
            map_to_original(site, scan, &port.src);
        }
        let at = c.crash.as_ref().map_or(
            " (no traceback through the project's code in its output)".to_string(),
            |s| {
                format!(
                    " at {}:{} (`{}`){}: {}",
                    s.file.display(),
                    s.crash.frame.line,
                    s.crash.frame.code.as_deref().unwrap_or(""),
                    s.original_line.map_or(String::new(), |l| format!(
                        ", line {l} of the original{}",
                        s.original_code
                            .as_ref()
                            .map_or(String::new(), |code| format!(" (`{code}`)"))
                    )),
                    s.crash.error
                )
            },
        );
        port.summary = format!(
            "the port crashed on sdaa ({}){at}; the original ran to the end",
            c.outcome
        );
        return Some(Verdict::Crash);
    }
    // Proof that it ran on sdaa: the emulator's op inventory of this run, never console text.
    match &port.inventory {
        Some(inv) if inv.device_ops > 0 => c.device = "sdaa (emulator)".into(),
        Some(_) => {
            c.device = "sdaa (emulator: no op ran on the device)".into();
            port.summary = "the port ran, but nothing ran on sdaa: the emulator's op inventory of this run lists no op on the device. Does the training script import torch_sdaa and move the model and data to the device? See the findings".into();
            return Some(Verdict::NotOnSdaa);
        }
        None => {
            c.device = "sdaa (no record of the device runtime)".into();
            let said = c.banner.as_ref().map_or(String::new(), |b| {
                format!(" (its console printed `{b}`, which is text, not a record of the device)")
            });
            port.summary = format!(
                "the port ran, but nothing shows it ran on sdaa: the device runtime wrote no record in this run (the emulator's op inventory){said}. Does the training script import torch_sdaa and move the model and data to the device? On a real card the kit cannot read such a record yet. See the findings"
            );
            return Some(Verdict::NotOnSdaa);
        }
    }
    None
}

/// The verdict once the candidate ran.
fn judge_candidate(port: &mut Port, saved: &Saved, scan: Option<&migrate::Report>) -> Verdict {
    if let Some(verdict) = judge_candidate_ran(port, scan) {
        return verdict;
    }
    let work = port.out.join(WORK_DIR);
    let c = port.candidate.as_mut().expect("the candidate ran");
    // The candidate's losses, from the same kind of source as the original's.
    if saved.backward {
        match backward_log(&work, "candidate") {
            Some((path, values)) if values > 0 => {
                c.loss_log = Some(path);
                c.loss_metrics = vec![BACKWARD_METRIC.to_string()];
                c.steps = values;
                c.loss_error = None;
            }
            _ => {
                port.summary = format!(
                    "the port ran on sdaa, but the shim recorded no backward() loss in it (`{BACKWARD_METRIC}`, the original's losses)"
                );
                return Verdict::NoCandidateLoss;
            }
        }
    }
    let Some(c_log) = c.loss_log.clone() else {
        port.summary = format!(
            "the port ran on sdaa, but {}",
            c.loss_error
                .clone()
                .unwrap_or_else(|| "logged no loss".into())
        );
        return Verdict::NoCandidateLoss;
    };
    let wanted: Vec<String> = saved.series.iter().map(|s| s.metric.clone()).collect();
    if let Some(missing) = wanted.iter().find(|m| !c.loss_metrics.contains(m)) {
        port.summary = format!(
            "the original logged `{missing}`, the port {}: the two runs do not log the same loss",
            if c.loss_metrics.is_empty() {
                "nothing".to_string()
            } else {
                c.loss_metrics
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        return Verdict::NoCandidateLoss;
    }
    let device = c.device.clone();
    let b_log = saved.baseline.loss_log.clone().unwrap_or_default();
    let rule = saved.rule.clone();
    let step_rule = rule.name == "step-by-step";
    let mut texts = Vec::new();
    let mut first_rel1_fail: Option<(String, String)> = None;
    let mut verdict = Verdict::Pass;
    let mut reason = String::new();
    let mut pass_reason = String::new();
    let mut rel1_error = None;
    for base in &saved.series {
        let metric = &base.metric;
        // The ModelZoo's 1% rule, the acceptance figure in every case.
        let options = compare::Options {
            metric: metric.clone(),
            metric_fallback: false,
            ..compare::Options::default()
        };
        let cmp = compare::read_series(&b_log, "baseline", metric, 0)
            .and_then(|b| Ok((b, compare::read_series(&c_log, "candidate", metric, 0)?)))
            .and_then(|(b, c)| compare::compare(b, c, &options));
        match cmp {
            Ok(cmp) => {
                texts.push(validator::report::text(&cmp));
                if !cmp.verdict.pass && first_rel1_fail.is_none() {
                    first_rel1_fail = Some((metric.clone(), cmp.verdict.reason.clone()));
                    port.compare = Some(cmp);
                } else {
                    if pass_reason.is_empty() {
                        pass_reason = cmp.verdict.reason.clone();
                    }
                    if port.compare.is_none() {
                        port.compare = Some(cmp);
                    }
                }
            }
            Err(e) if !step_rule => {
                port.summary = format!(
                    "the port ran to the end on {device}, but its `{metric}` cannot be compared with the original's by the 1% rule: {e}"
                );
                return Verdict::StepsDiffer;
            }
            Err(e) => {
                let why = format!("`{metric}`: the 1% rule cannot be applied: {e}");
                rel1_error.get_or_insert_with(|| why.clone());
                texts.push(why);
            }
        }
        if step_rule {
            let cand = match steps::Series::read(&c_log, metric) {
                Ok(s) => s,
                Err(why) => {
                    port.summary = format!("the port ran on sdaa, but {why}");
                    return Verdict::NoCandidateLoss;
                }
            };
            let noise = saved.noise.get(metric).copied().unwrap_or(0.0);
            let judged = steps::judge(base, &cand, noise);
            match &judged.outcome {
                steps::Outcome::Fail(f) if verdict != Verdict::Drift => {
                    verdict = Verdict::Drift;
                    reason = format!(
                        "its `{metric}` left the original's at {}: original {}, port {}, difference {:.3e} > tolerance {:.3e} (step-by-step rule: max of the original's run-to-run noise {:.3e}, the printed precision {:.1e} and {} float32 ulps)",
                        f.step, f.baseline, f.candidate, f.difference, f.tolerance, judged.noise, judged.print_unit, steps::FLOOR_ULPS
                    );
                }
                steps::Outcome::StepsDiffer { why } if verdict == Verdict::Pass => {
                    verdict = Verdict::StepsDiffer;
                    reason = why.clone();
                }
                _ => {}
            }
            port.steps.push(judged);
        }
    }
    port.compare_text = Some(texts.join("\n\n"));
    match verdict {
        Verdict::Drift => {
            port.summary = format!(
                "the port ran to the end on {device}, but {reason} — next: `modelzoo diff` of one step's dumps names the op (docs/diff.md)"
            );
            return Verdict::Drift;
        }
        Verdict::StepsDiffer => {
            port.summary = format!(
                "the port ran to the end on {device}, but its losses cannot be compared step by step with the original's: {reason}"
            );
            return Verdict::StepsDiffer;
        }
        _ => {}
    }
    if let Some((metric, why)) = first_rel1_fail {
        port.summary = format!(
            "the port ran to the end on {device}, but its `{metric}` drifted from the original's by the ModelZoo's 1% rule: {why} — next: `modelzoo diff` of one step's dumps names the op (docs/diff.md)"
        );
        return Verdict::Drift;
    }
    if pass_reason.is_empty() {
        pass_reason = rel1_error.unwrap_or_default();
    }
    port.summary = if step_rule {
        let steps: usize = port.steps.iter().map(|j| j.steps).max().unwrap_or(0);
        format!(
            "the port ran to the end on {device} and matches the original at every step ({steps} compared, step-by-step rule); 1% rule on the final value: {pass_reason}"
        )
    } else {
        format!(
            "the port ran to the end on {device} and matches the original by the ModelZoo's 1% rule: {pass_reason}"
        )
    };
    Verdict::Pass
}

/// Where the crashing line of the port came from in the original: the migration's line map
/// of that file, read backwards.
fn map_to_original(site: &mut CrashSite, scan: &migrate::Report, src: &Path) {
    let line = site.crash.frame.line;
    let original = match scan.changes.iter().find(|c| c.path == site.file) {
        Some(change) => change
            .line_map
            .iter()
            .position(|&new| new == line)
            .map(|old| old + 1),
        None => Some(line),
    };
    site.original_line = original;
    site.original_code = original.and_then(|l| {
        std::fs::read_to_string(src.join(&site.file))
            .ok()?
            .lines()
            .nth(l - 1)
            .map(|s| s.trim().to_string())
    });
}

/// The emulator's op inventory of rank 0, when the port ran on the emulator and it was
/// written after `started` (a record of this run, not an older one).
fn read_inventory(dir: &Path, started: SystemTime) -> Option<Inventory> {
    let file = dir.join("op_inventory.rank0.json");
    let meta = std::fs::metadata(&file).ok()?;
    if !meta.is_file() || meta.modified().ok()? < started {
        return None;
    }
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).ok()?).ok()?;
    let list = |v: &serde_json::Value| v.as_array().cloned().unwrap_or_default();
    let device_ops = list(&json["device_ops"]);
    let calls = device_ops
        .iter()
        .filter_map(|o| o["count"].as_u64())
        .sum::<u64>();
    let fp64_device = list(&json["fp64"]["device"])
        .iter()
        .filter_map(|o| Some((o["op"].as_str()?.to_string(), o["count"].as_u64()?)))
        .collect();
    let emulator_fallbacks = list(&json["emulator_fallbacks"])
        .iter()
        .filter_map(|o| o["op"].as_str().map(str::to_string))
        .collect();
    Some(Inventory {
        file,
        device_ops: device_ops.len(),
        device_calls: calls,
        host_ops: list(&json["host_ops"]).len(),
        fp64_device,
        emulator_fallbacks,
        coverage_rate: json["coverage"]["rate_percent"].as_f64().unwrap_or(0.0),
        coverage_txt: dir.join("coverage.rank0.txt"),
    })
}

fn finish(mut port: Port, verdict: Verdict, out: &Path) -> Result<Port, PortError> {
    port.verdict = verdict;
    port.exit_code = verdict.exit_code();
    report::write(&port, out)?;
    Ok(port)
}
