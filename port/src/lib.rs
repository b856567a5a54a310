//! `modelzoo port`: the porter's loop on one machine. A CUDA PyTorch project is migrated
//! (`migrate`) into a new directory, the original runs on the baseline device (CUDA where a GPU
//! is present, else the CPU through a CUDA-on-CPU shim, `python/port/sitecustomize.py`) and the
//! port runs on SDAA (a card, else the SDAA emulator's `torch_sdaa`), the same command in
//! each; their losses are compared with the 1% rule (`validator::compare`), and `PORT.md` /
//! `port.json` say what happened: the verdict, both runs, the figures, every rewrite, what the
//! migration left to a person, and what ran on the device (the emulator's op inventory, fp64).

mod copy;
pub mod losses;
mod report;
pub mod trace;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use modelzoo_support::kit::{python_path_with, Kit};
use modelzoo_support::process::{self, Job, RunOutcome};
use serde::Serialize;
use validator::compare;

pub use report::{render_markdown, JSON_FILE, MARKDOWN_FILE};

/// The directory of a port's own files (the runs' output, the op inventory, the CPU shim),
/// inside the migrated directory.
pub const WORK_DIR: &str = ".modelzoo-port";

/// The CPU baseline's shim, written into the work directory for the baseline run only.
const CPU_SHIM: &str = include_str!("../../python/port/sitecustomize.py");

/// Where the original runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The port ran to the end on SDAA and matches the original within the rule.
    Pass,
    /// The port ran to the end on SDAA, but its losses drifted from the original's.
    Drift,
    /// The port crashed, timed out or was killed.
    Crash,
    /// The port ran, but nothing of it ran on SDAA.
    NotOnSdaa,
    /// The port ran, but logged no loss the original logged.
    NoCandidateLoss,
    /// The original itself does not run: fix it first (the port was not run).
    BaselineFailed,
    /// The original ran but no loss could be found in what it wrote.
    NoBaselineLoss,
    /// Interrupted by the user.
    Interrupted,
}

impl Verdict {
    /// 0 pass; 1 the port crashed or drifted; 2 unusable input; 130 interrupted.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Drift | Verdict::Crash | Verdict::NotOnSdaa | Verdict::NoCandidateLoss => 1,
            Verdict::BaselineFailed | Verdict::NoBaselineLoss => 2,
            Verdict::Interrupted => 130,
        }
    }
}

/// One run of the command.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// `cuda`, `cpu (CUDA mapped by the port's shim)`, `sdaa (emulator)`, `sdaa`.
    pub device: String,
    pub dir: PathBuf,
    /// Its stdout and stderr.
    pub console: PathBuf,
    /// `exit 0`, `exit 1`, `killed by signal 9`, `timed out after 600 s`, ...
    pub outcome: String,
    pub exit_code: Option<i32>,
    pub seconds: f64,
    /// Where its losses were read, the metric and how many rank-0 values.
    pub loss_log: Option<PathBuf>,
    pub loss_metric: Option<String>,
    pub steps: usize,
    /// Why no loss was found.
    pub loss_error: Option<String>,
    /// The last lines of its output.
    pub tail: Vec<String>,
    /// Where it crashed in the project, when it did.
    pub crash: Option<CrashSite>,
}

/// A crash in the project's code, mapped back to the original source.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct Rewrite {
    pub file: PathBuf,
    pub lines: String,
    pub rules: String,
}

/// What a person must still look at, located in the migrated file.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub file: PathBuf,
    pub line: usize,
    pub rule: String,
    pub message: String,
}

/// What ran on the device, from the emulator's op inventory (rank 0).
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

/// Everything a port found; `port.json` is this, `PORT.md` its rendering.
#[derive(Debug, Clone, Serialize)]
pub struct Port {
    pub format: &'static str,
    pub version: u32,
    pub verdict: Verdict,
    pub exit_code: u8,
    /// One sentence: why this verdict, and what to do next.
    pub summary: String,
    pub src: PathBuf,
    pub out: PathBuf,
    pub command: Vec<String>,
    pub files_copied: usize,
    pub not_copied: Vec<(PathBuf, String)>,
    pub rewrites: Vec<Rewrite>,
    pub findings: Vec<Finding>,
    pub baseline: Run,
    pub candidate: Option<Run>,
    pub compare: Option<compare::Comparison>,
    /// The compare's figures as text (`modelzoo compare`'s own).
    #[serde(skip)]
    pub compare_text: Option<String>,
    pub inventory: Option<Inventory>,
}

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
    let copied = copy::copy_tree(&src, &out)?;
    let migrate_err = |source| PortError::Migrate {
        path: out.clone(),
        source,
    };
    let scan = migrate::scan(&out).map_err(migrate_err)?;
    let written = migrate::write(&scan).map_err(migrate_err)?;
    let work = out.join(WORK_DIR);
    std::fs::create_dir_all(&work).map_err(|e| PortError::Input {
        path: work.clone(),
        message: e.to_string(),
    })?;

    let rewrites = scan
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
        .collect();
    let findings = written
        .report
        .findings
        .iter()
        .map(|f| Finding {
            file: f.path.clone(),
            line: f.line,
            rule: f.rule.to_string(),
            message: f.message.clone(),
        })
        .collect();
    let mut port = Port {
        format: "modelzoo-port",
        version: 1,
        verdict: Verdict::Pass,
        exit_code: 0,
        summary: String::new(),
        src: src.clone(),
        out: out.clone(),
        command: opts.command.clone(),
        files_copied: copied.files,
        not_copied: copied
            .not_copied
            .into_iter()
            .map(|(p, why)| (p, why.to_string()))
            .collect(),
        rewrites,
        findings,
        baseline: Run::empty(),
        candidate: None,
        compare: None,
        compare_text: None,
        inventory: None,
    };

    let baseline = run_side(opts, Side::Baseline, &src, &work, cancel)?;
    port.baseline = baseline;
    if let Some(verdict) = judge_baseline(&mut port, opts, &src) {
        return finish(port, verdict, opts);
    }
    let candidate = run_side(opts, Side::Candidate, &out, &work, cancel)?;
    port.inventory = read_inventory(&work.join("inventory"));
    port.candidate = Some(candidate);
    let verdict = judge_candidate(&mut port, &scan);
    finish(port, verdict, opts)
}

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
                "--out is not empty: give a new directory (port writes the migrated project there and never overwrites files)".into(),
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
            loss_metric: None,
            steps: 0,
            loss_error: None,
            tail: Vec::new(),
            crash: None,
        }
    }

    fn ran_to_the_end(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Runs the command on one side, in `dir`, its output in the work directory.
fn run_side(
    opts: &Options,
    side: Side,
    dir: &Path,
    work: &Path,
    cancel: &AtomicBool,
) -> Result<Run, PortError> {
    let (name, device) = match (side, opts.baseline_device) {
        (Side::Baseline, BaselineDevice::Cuda) => ("baseline", "cuda".to_string()),
        (Side::Baseline, BaselineDevice::Cpu) => (
            "baseline",
            "cpu (the original's CUDA calls mapped to the CPU by the port's shim)".to_string(),
        ),
        (Side::Candidate, _) => ("candidate", "sdaa".to_string()),
    };
    let console = work.join(format!("{name}.log"));
    let mut env: Vec<(&str, OsString)> = vec![("PYTHONUNBUFFERED", "1".into())];
    let kit_bin: Vec<PathBuf> = opts.kit.iter().filter_map(Kit::venv_bin).collect();
    let emulator: Vec<PathBuf> = opts.kit.iter().filter_map(Kit::emulator_python).collect();
    let mut first: Vec<PathBuf> = Vec::new();
    match side {
        Side::Baseline if opts.baseline_device == BaselineDevice::Cpu => {
            let shim = work.join("cpu-baseline");
            std::fs::create_dir_all(&shim)
                .and_then(|()| std::fs::write(shim.join("sitecustomize.py"), CPU_SHIM))
                .map_err(|e| PortError::Input {
                    path: shim.clone(),
                    message: format!("cannot write the CPU baseline's shim: {e}"),
                })?;
            first.push(shim);
            env.push(("CUDA_VISIBLE_DEVICES", "".into()));
        }
        Side::Baseline => {}
        Side::Candidate => {
            // The port must not reach a GPU by a path the migration missed.
            env.push(("CUDA_VISIBLE_DEVICES", "".into()));
            env.push((
                "SDAA_EMULATOR_OP_INVENTORY",
                work.join("inventory").into_os_string(),
            ));
        }
    }
    if let Some(pp) = python_path_with(&first, &emulator) {
        env.push(("PYTHONPATH", pp));
    }
    let mut command = Command::new(&opts.command[0]);
    command.args(&opts.command[1..]).current_dir(dir);
    if let Some(path) = process::prefixed_path(&kit_bin) {
        command.env("PATH", path);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    tracing::info!(side = name, dir = %dir.display(), "running {:?}", opts.command);
    eprintln!("port: running the {name} on {device} in {}", dir.display());
    let start = Instant::now();
    let outcome = process::run(Job {
        command,
        timeout: opts.timeout,
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
                opts.timeout.as_secs()
            ),
            None,
        ),
        RunOutcome::Interrupted => ("interrupted".to_string(), None),
        RunOutcome::SpawnFailed(e) => (format!("could not start `{}`: {e}", opts.command[0]), None),
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
    let device = if side == Side::Candidate {
        sdaa_kind(&text).to_string()
    } else {
        device
    };
    let mut run = Run {
        device,
        dir: dir.to_path_buf(),
        console: console.clone(),
        outcome: outcome_text,
        exit_code,
        seconds,
        loss_log: None,
        loss_metric: None,
        steps: 0,
        loss_error: None,
        tail,
        crash: None,
    };
    if outcome == RunOutcome::Interrupted {
        return Ok(run);
    }
    match losses::find(dir, &console, opts.log.as_deref(), None) {
        Ok(found) => {
            run.loss_log = Some(found.path);
            run.loss_metric = found.metrics.into_iter().next();
            run.steps = found.values;
        }
        Err(why) => run.loss_error = Some(why),
    }
    if !run.ran_to_the_end() {
        run.crash = trace::user_crash(&text, dir).map(|crash| {
            let file = crash
                .frame
                .file
                .strip_prefix(dir)
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

/// What the candidate's sdaa was, from torch_sdaa's version table in its output.
fn sdaa_kind(output: &str) -> &'static str {
    match output
        .lines()
        .find(|l| l.trim_start().starts_with("Torch-SDAA"))
    {
        Some(row) if row.contains("EMULATOR") => "sdaa (emulator)",
        Some(_) => "sdaa",
        None => "sdaa (no torch_sdaa version table in its output)",
    }
}

/// The verdict when the original cannot be compared against, else None.
fn judge_baseline(port: &mut Port, opts: &Options, src: &Path) -> Option<Verdict> {
    let b = &port.baseline;
    if b.outcome == "interrupted" {
        port.summary = "interrupted while the original ran".into();
        return Some(Verdict::Interrupted);
    }
    if !b.ran_to_the_end() {
        let at = b.crash.as_ref().map_or(String::new(), |c| {
            format!(
                " at {}:{} (`{}`): {}",
                src.join(&c.file).display(),
                c.crash.frame.line,
                c.crash.frame.code.as_deref().unwrap_or(""),
                c.crash.error
            )
        });
        let hint = if opts.baseline_device == BaselineDevice::Cpu {
            " — it ran on the CPU with its CUDA calls mapped (no GPU here); run port where a GPU is, with --baseline-device cuda, if it needs CUDA beyond that"
        } else {
            ""
        };
        port.summary = format!(
            "the original does not run ({}){at}: the original is broken, not the port — fix it first{hint}; the port was not run",
            b.outcome
        );
        return Some(Verdict::BaselineFailed);
    }
    if let Some(why) = &b.loss_error {
        port.summary = format!("the original ran, but {why}; the port was not run");
        return Some(Verdict::NoBaselineLoss);
    }
    None
}

/// The verdict once both sides ran.
fn judge_candidate(port: &mut Port, scan: &migrate::Report) -> Verdict {
    let c = port.candidate.as_mut().expect("the candidate ran");
    if c.outcome == "interrupted" {
        port.summary = "interrupted while the port ran".into();
        return Verdict::Interrupted;
    }
    if !c.ran_to_the_end() {
        if let Some(site) = c.crash.as_mut() {
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
        return Verdict::Crash;
    }
    let ran_on_sdaa = port
        .inventory
        .as_ref()
        .map_or(c.device == "sdaa", |inv| inv.device_ops > 0);
    if !ran_on_sdaa {
        port.summary = format!(
            "the port ran, but nothing ran on sdaa ({}): does the training script import torch_sdaa and move the model and data to the device? See the findings",
            c.device
        );
        return Verdict::NotOnSdaa;
    }
    let metric = port.baseline.loss_metric.clone().unwrap_or_default();
    let (Some(b_log), Some(c_log)) = (port.baseline.loss_log.clone(), c.loss_log.clone()) else {
        port.summary = format!(
            "the port ran on sdaa, but {}",
            c.loss_error
                .clone()
                .unwrap_or_else(|| "logged no loss".into())
        );
        return Verdict::NoCandidateLoss;
    };
    if c.loss_metric.as_deref() != Some(metric.as_str()) {
        port.summary = format!(
            "the original logged `{metric}`, the port `{}`: the two runs do not log the same loss",
            c.loss_metric.as_deref().unwrap_or("nothing")
        );
        return Verdict::NoCandidateLoss;
    }
    let options = compare::Options {
        metric: metric.clone(),
        ..compare::Options::default()
    };
    let cmp = compare::read_series(&b_log, "baseline", &metric, 0)
        .and_then(|b| Ok((b, compare::read_series(&c_log, "candidate", &metric, 0)?)))
        .and_then(|(b, c)| compare::compare(b, c, &options));
    match cmp {
        Ok(cmp) => {
            let pass = cmp.verdict.pass;
            port.summary = if pass {
                format!(
                    "the port ran to the end on {} and matches the original: {}",
                    c.device, cmp.verdict.reason
                )
            } else {
                format!(
                    "the port ran to the end on {}, but its `{metric}` drifted from the original's: {} — next: `modelzoo diff` of one step's dumps names the op (docs/diff.md)",
                    c.device, cmp.verdict.reason
                )
            };
            port.compare_text = Some(validator::report::text(&cmp));
            port.compare = Some(cmp);
            if pass {
                Verdict::Pass
            } else {
                Verdict::Drift
            }
        }
        Err(e) => {
            port.summary = format!("the two runs' losses cannot be compared: {e}");
            Verdict::Drift
        }
    }
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

/// The emulator's op inventory of rank 0, when the port ran on the emulator.
fn read_inventory(dir: &Path) -> Option<Inventory> {
    let file = dir.join("op_inventory.rank0.json");
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

fn finish(mut port: Port, verdict: Verdict, opts: &Options) -> Result<Port, PortError> {
    port.verdict = verdict;
    port.exit_code = verdict.exit_code();
    report::write(&port, &opts.out)?;
    Ok(port)
}
