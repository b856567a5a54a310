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

pub mod bisect;
mod copy;
mod judge;
pub mod losses;
mod md;
pub mod multirun;
pub mod ops;
mod report;
mod runs;
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

use judge::{judge_original, run_and_judge_candidate, run_unjudged_candidate};
use runs::{fresh_dir, write_shim};

pub use report::{render_markdown, JSON_FILE, MARKDOWN_FILE};

/// The directory of a port's own files (the runs and their output, the op inventory, the
/// shim, the saved baseline), inside the migrated directory.
pub const WORK_DIR: &str = ".modelzoo-port";

/// What `--recheck` reads back: the first port's settings and the original's judged runs.
pub const SAVED_FILE: &str = "baseline.json";

/// The port's run-time shim (the CPU baseline's CUDA-on-CPU mapping, the backward losses),
/// written into the work directory and put first on every run's PYTHONPATH.
const CPU_SHIM: &str = include_str!("../../python/port/sitecustomize.py");
/// The shim's custom-op routes (`--op`), imported by it only when routes are set.
const OPS_SHIM: &str = include_str!("../../python/port/_modelzoo_port_ops.py");

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
    /// `--op`: the port's custom-op wrappers routed to device implementations.
    pub ops: Vec<ops::OpRoute>,
    /// `--baseline-op`: the original's (default: the project's pure-PyTorch twin).
    pub baseline_ops: Vec<ops::OpRoute>,
    /// `--runs N`: how many times each side runs (1: one run a side, judged pair against pair;
    /// 2 or more: judged across the runs too, [`multirun`]).
    pub runs: usize,
    /// `--seed N`: the shim seeds torch, `random` and numpy in every run, original and port
    /// (`MODELZOO_PORT_SEED`), for a script that seeds nothing; `--recheck` keeps it.
    pub seed: Option<u32>,
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
    /// A `--runs` the port cannot honour.
    #[error("{0}")]
    Runs(String),
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
    /// The original needs the project's own C++/CUDA extension, which is not built on this
    /// machine, and no `--op` routes the wrapper that calls it.
    ExtensionNotBuilt,
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
            | Verdict::ExtensionNotBuilt
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
    /// Its routed custom-op wrappers (`--op`): what each ran, how many times (rank 0).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ops_routed: BTreeMap<String, ops::RoutedCalls>,
    /// The last value of each evaluation metric its log gives (`val.mAP` of a COCO summary):
    /// shown in PORT.md beside the losses, not part of the verdict.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub eval: BTreeMap<String, f64>,
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
    /// The custom-op routes (`--op`, `--baseline-op`) and the wrappers left unrouted.
    pub routing: ops::OpRouting,
    /// `--runs N` (N ≥ 2): every further run and the comparison across the runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub across_runs: Option<multirun::AcrossRuns>,
    /// `--seed`: the seed the shim gave every run (None: the script's own seeding only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u32>,
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
    /// The `--op` routes (the recheck's port keeps them).
    #[serde(default)]
    routing: ops::OpRouting,
    /// `--seed` (the recheck's port is seeded alike).
    #[serde(default)]
    seed: Option<u32>,
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
    let routing =
        ops::plan(&src, &opts.ops, &opts.baseline_ops).map_err(|message| PortError::Input {
            path: src.clone(),
            message,
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
    let ctx_routing = &routing;
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
        routing: ctx_routing.clone(),
        across_runs: None,
        seed: opts.seed,
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
        routing,
        seed: opts.seed,
    };
    write_shim(&work)?;

    let saved = match judge_original(&mut port, &ctx, opts, cancel)? {
        Ok(saved) => saved,
        Err(Verdict::NotReproducible)
            if opts.runs >= multirun::MIN_RUNS_FLAG
                && port
                    .baseline_second
                    .as_ref()
                    .is_some_and(|b| b.loss_log.is_some()) =>
        {
            // Two runs of the original differ: only a verdict across several runs can judge.
            let verdict =
                multirun::judge_across_runs(&mut port, &ctx, opts.runs, None, &scan, cancel)?;
            return finish(port, verdict, &out);
        }
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
    let verdict = if opts.runs >= multirun::MIN_RUNS_FLAG {
        multirun::judge_across_runs(&mut port, &ctx, opts.runs, Some(&saved), &scan, cancel)?
    } else {
        run_and_judge_candidate(&mut port, &ctx, &saved, Some(&scan), cancel)?
    };
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
        routing: saved.routing.clone(),
        seed: saved.seed,
    };
    write_shim(&work)?;
    let ctx_routing = &ctx.routing;
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
        routing: ctx_routing.clone(),
        across_runs: None,
        seed: saved.seed,
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
    routing: ops::OpRouting,
    seed: Option<u32>,
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
    if opts.runs == 0 {
        return Err(PortError::Runs(
            "--runs 0: each side must run at least once (1, the default, is one run a side; 3 or more let Welch's t-test weigh the runs' noise)".into(),
        ));
    }
    if opts.runs > multirun::MAX_RUNS {
        return Err(PortError::Runs(format!(
            "--runs {}: at most {} runs a side (each is a whole training run)",
            opts.runs,
            multirun::MAX_RUNS
        )));
    }
    if opts.runs >= multirun::MIN_RUNS_FLAG && opts.baseline_log.is_some() {
        return Err(PortError::Runs(format!(
            "--runs {} with --baseline-log: the log is one run of the original, and a comparison across runs needs as many of the original's runs as the port's; drop --baseline-log (the original runs here), or --runs",
            opts.runs
        )));
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
            ops_routed: BTreeMap::new(),
            eval: BTreeMap::new(),
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
    eval: BTreeMap<String, f64>,
}

fn finish(mut port: Port, verdict: Verdict, out: &Path) -> Result<Port, PortError> {
    port.verdict = verdict;
    port.exit_code = verdict.exit_code();
    report::write(&port, out)?;
    Ok(port)
}
