//! `modelzoo-ci`: the PR functional check of the adaptation guide (§3.7) — for each model of
//! `model.yaml`: the layout check (`validator`), its short functional command under a timeout
//! (`modelzoo_support::process`: stopped on timeout with everything it started), and a check of the log it wrote (`dllogger`'s
//! reader): a finite `train.loss`, `train.ips` > 0, no NaN/inf, every listed metric present.

pub mod report;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use model_config::{ModelEntry, ModelYaml};
use serde::Serialize;

use modelzoo_support::process::{run_command, RunOutcome};
pub use report::{render_junit, render_markdown, render_table};

/// Errors that stop the check before any model runs.
#[derive(Debug, thiserror::Error)]
pub enum CiError {
    #[error("unknown model `{name}` in --models; model.yaml lists: {}", valid.join(", "))]
    UnknownModel { name: String, valid: Vec<String> },
    #[error("`git {args}` in {} failed: {message}", dir.display())]
    Git {
        args: String,
        dir: PathBuf,
        message: String,
    },
    #[error("cannot create the work directory {}: {error}", path.display())]
    WorkDir {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot write {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// How to run the check.
#[derive(Debug, Clone)]
pub struct Options {
    /// Device passed to every command as `{device}`; models not listing it are skipped.
    pub device: String,
    /// Models run at once.
    pub jobs: usize,
    /// Each model gets `<work_dir>/<name>/` as `{output_dir}`, with its console output in
    /// `console.log` there.
    pub work_dir: PathBuf,
    /// Directories put in front of PATH for the commands (where `run_<model>` binaries are).
    pub path_prefix: Vec<PathBuf>,
    /// Grace period between SIGTERM and SIGKILL on timeout.
    pub kill_grace: Duration,
    /// Set (e.g. from a SIGINT handler) to stop: the running commands' process groups are
    /// killed and no further model starts.
    pub cancel: Arc<AtomicBool>,
}

/// The outcome of one stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", content = "detail", rename_all = "lowercase")]
pub enum Stage {
    Pass(String),
    Fail(String),
    Skip(String),
}

impl Stage {
    pub fn failed(&self) -> bool {
        matches!(self, Stage::Fail(_))
    }
    pub fn label(&self) -> &'static str {
        match self {
            Stage::Pass(_) => "pass",
            Stage::Fail(_) => "FAIL",
            Stage::Skip(_) => "skip",
        }
    }
    pub fn detail(&self) -> &str {
        match self {
            Stage::Pass(d) | Stage::Fail(d) | Stage::Skip(d) => d,
        }
    }
}

/// Everything the check found for one model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelResult {
    pub name: String,
    pub dir: PathBuf,
    pub layout: Stage,
    pub run: Stage,
    pub log: Stage,
    /// The command as run.
    pub command: String,
    /// Console output of the command (stdout + stderr).
    pub console: PathBuf,
    pub seconds: f64,
}

/// What a model's check came to, for the counts, the reports and the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every stage passed.
    Pass,
    /// Nothing failed, but it was not run (its `devices` do not include `--device`, or the
    /// check was interrupted first): not a pass, not a failure.
    Skip,
    /// A stage failed.
    Fail,
}

impl ModelResult {
    pub fn status(&self) -> Status {
        let stages = [&self.layout, &self.run, &self.log];
        if stages.iter().any(|s| s.failed()) {
            Status::Fail
        } else if stages.iter().all(|s| matches!(s, Stage::Pass(_))) {
            Status::Pass
        } else {
            Status::Skip
        }
    }
    /// Every stage passed (a skipped model did not pass).
    pub fn passed(&self) -> bool {
        self.status() == Status::Pass
    }
    pub fn skipped(&self) -> bool {
        self.status() == Status::Skip
    }
    pub fn failed(&self) -> bool {
        self.status() == Status::Fail
    }
}

/// The counts every report shows; `passed + skipped + failed == total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub total: usize,
    pub passed: usize,
    pub skipped: usize,
    pub failed: usize,
}

impl Summary {
    pub fn of(results: &[ModelResult]) -> Summary {
        let count = |st: Status| results.iter().filter(|r| r.status() == st).count();
        Summary {
            total: results.len(),
            passed: count(Status::Pass),
            skipped: count(Status::Skip),
            failed: count(Status::Fail),
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} models checked, {} passed, {} skipped, {} failed",
            self.total, self.passed, self.skipped, self.failed
        )
    }
}

/// The models to check: those named (`--models`), those whose directory changed since `rev`
/// (`--changed-since`), or all.
pub fn select(
    yaml: &ModelYaml,
    names: Option<&[String]>,
    changed_since: Option<&str>,
) -> Result<Vec<ModelEntry>, CiError> {
    if let Some(names) = names {
        let mut out = Vec::new();
        for name in names {
            match yaml.get(name) {
                Some(e) => out.push(e.clone()),
                None => {
                    return Err(CiError::UnknownModel {
                        name: name.clone(),
                        valid: yaml.models.iter().map(|m| m.name.clone()).collect(),
                    })
                }
            }
        }
        return Ok(out);
    }
    if let Some(rev) = changed_since {
        let changed = changed_files(&yaml.root, rev)?;
        return Ok(yaml
            .models
            .iter()
            .filter(|m| {
                let prefix = format!("{}/", m.path.trim_end_matches('/'));
                changed.iter().any(|f| f.starts_with(&prefix))
            })
            .cloned()
            .collect());
    }
    Ok(yaml.models.clone())
}

/// Files changed between `rev` and the working tree (committed, staged or not), plus
/// untracked ones, relative to `root`.
pub fn changed_files(root: &Path, rev: &str) -> Result<Vec<String>, CiError> {
    let mut files = git(root, &["diff", "--name-only", "--relative", rev, "--"])?;
    files.extend(git(root, &["ls-files", "--others", "--exclude-standard"])?);
    Ok(files)
}

fn git(dir: &Path, args: &[&str]) -> Result<Vec<String>, CiError> {
    let err = |message: String| CiError::Git {
        args: args.join(" "),
        dir: dir.to_path_buf(),
        message,
    };
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| err(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(err(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// Checks every entry, `opts.jobs` at a time; results in the order of `entries`.
pub fn run_all(
    yaml: &ModelYaml,
    entries: &[ModelEntry],
    opts: &Options,
) -> Result<Vec<ModelResult>, CiError> {
    std::fs::create_dir_all(&opts.work_dir).map_err(|error| CiError::WorkDir {
        path: opts.work_dir.clone(),
        error,
    })?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(vec![None; entries.len()]);
    let jobs = opts.jobs.clamp(1, entries.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(entry) = entries.get(i) else { break };
                let r = if opts.cancel.load(Ordering::SeqCst) {
                    not_run(yaml, entry, opts)
                } else {
                    check_model(yaml, entry, opts)
                };
                if let Ok(mut all) = results.lock() {
                    all[i] = Some(r);
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(results.into_iter().flatten().collect())
}

/// `<work_dir>/<name>`, absolute: the command runs in the model's directory, so a relative
/// `{output_dir}` would put its output somewhere other than the directory CI clears and reads.
fn model_out_dir(opts: &Options, entry: &ModelEntry) -> PathBuf {
    let dir = opts.work_dir.join(&entry.name);
    std::path::absolute(&dir).unwrap_or(dir)
}

/// A model the check never got to (interrupted before it started).
fn not_run(yaml: &ModelYaml, entry: &ModelEntry, opts: &Options) -> ModelResult {
    let skip = || Stage::Skip("not run: interrupted".into());
    let out_dir = model_out_dir(opts, entry);
    ModelResult {
        name: entry.name.clone(),
        dir: yaml.model_dir(entry),
        layout: skip(),
        run: skip(),
        log: skip(),
        command: entry.command_for(&opts.device, &out_dir),
        console: out_dir.join("console.log"),
        seconds: 0.0,
    }
}

/// The three stages for one model.
pub fn check_model(yaml: &ModelYaml, entry: &ModelEntry, opts: &Options) -> ModelResult {
    let started = Instant::now();
    let dir = yaml.model_dir(entry);
    tracing::info!(model = %entry.name, dir = %dir.display(), "checking");
    let layout = layout_stage(yaml, &dir);
    let out_dir = model_out_dir(opts, entry);
    let console = out_dir.join("console.log");
    let command = entry.command_for(&opts.device, &out_dir);
    let (run, log) = if !entry.devices.iter().any(|d| d == &opts.device) {
        let why = format!(
            "device `{}` not in its devices ({})",
            opts.device,
            entry.devices.join(", ")
        );
        (Stage::Skip(why.clone()), Stage::Skip(why))
    } else if !dir.is_dir() {
        let why = format!("model directory {} does not exist", dir.display());
        (Stage::Fail(why), Stage::Skip("not run".into()))
    } else {
        run_and_check(entry, &dir, &out_dir, &console, &command, opts)
    };
    ModelResult {
        name: entry.name.clone(),
        dir,
        layout,
        run,
        log,
        command,
        console,
        seconds: started.elapsed().as_secs_f64(),
    }
}

fn layout_stage(yaml: &ModelYaml, dir: &Path) -> Stage {
    let options = validator::layout::Options {
        model_yaml: Some(yaml.file.clone()),
    };
    let mut v = match validator::layout::Validator::new(&options) {
        Ok(v) => v,
        Err(e) => return Stage::Fail(e.to_string()),
    };
    match v.check_dir(dir) {
        Ok(r) if r.findings.is_empty() => Stage::Pass(String::new()),
        Ok(r) => Stage::Fail(
            r.findings
                .iter()
                .map(|f| format!("{}: {}: {}", f.path.display(), f.rule, f.message))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Err(e) => Stage::Fail(e.to_string()),
    }
}

fn run_and_check(
    entry: &ModelEntry,
    dir: &Path,
    out_dir: &Path,
    console: &Path,
    command: &str,
    opts: &Options,
) -> (Stage, Stage) {
    // A fresh output directory, so a log left by an earlier run cannot pass for this one.
    if out_dir.exists() {
        if let Err(e) = std::fs::remove_dir_all(out_dir) {
            let why = format!("cannot clear {}: {e}", out_dir.display());
            return (Stage::Fail(why), Stage::Skip("not run".into()));
        }
    }
    if let Err(e) = std::fs::create_dir_all(out_dir) {
        let why = format!("cannot create {}: {e}", out_dir.display());
        return (Stage::Fail(why), Stage::Skip("not run".into()));
    }
    // model.yaml refuses such a log; an entry built in code gets the same answer here.
    if let Err(why) = entry.check_log() {
        return (
            Stage::Skip("not run: invalid `log`".into()),
            Stage::Fail(why),
        );
    }
    let timeout = Duration::from_secs(entry.timeout);
    let outcome = run_command(
        command,
        dir,
        timeout,
        console,
        &opts.path_prefix,
        opts.kill_grace,
        &opts.cancel,
    );
    let tail = || console_tail(console);
    let run = match &outcome {
        RunOutcome::Exited { code: 0 } => Stage::Pass(String::new()),
        RunOutcome::Exited { code } => {
            Stage::Fail(format!("exit status {code}; last output: {}", tail()))
        }
        RunOutcome::Signalled { signal } => Stage::Fail(format!(
            "killed by signal {signal}; last output: {}",
            tail()
        )),
        RunOutcome::TimedOut => Stage::Fail(format!(
            "timed out after {} s (process group killed); last output: {}",
            entry.timeout,
            tail()
        )),
        RunOutcome::Interrupted => Stage::Fail(format!(
            "interrupted (process group killed); last output: {}",
            tail()
        )),
        RunOutcome::SpawnFailed(e) => Stage::Fail(format!("cannot start `sh -c`: {e}")),
    };
    let log = if outcome == RunOutcome::Interrupted {
        Stage::Skip("not checked: interrupted".into())
    } else {
        check_log(&entry.log_path(dir, out_dir), &entry.metrics)
    };
    (run, log)
}

/// The last non-empty line of the console log, for failure messages.
fn console_tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(none)");
    let line = line.trim();
    if line.chars().count() > 200 {
        format!("{}…", line.chars().take(200).collect::<String>())
    } else {
        line.to_string()
    }
}

/// Reads the log a model wrote: at least one finite `train.loss`, every `train.ips` > 0, no
/// NaN/inf anywhere, every metric in `metrics` present.
pub fn check_log(path: &Path, metrics: &[String]) -> Stage {
    let mut reader = match dllogger::open(path) {
        Ok(r) => r,
        Err(e) => return Stage::Fail(format!("no log: {e}")),
    };
    let mut records = 0u64;
    let mut losses = 0u64;
    let mut ips_ok = 0u64;
    let mut seen: Vec<bool> = vec![false; metrics.len()];
    loop {
        let rec = match reader.try_next() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => return Stage::Fail(format!("{}: unreadable: {e}", path.display())),
        };
        records += 1;
        let at = || match (rec.epoch, rec.iteration) {
            (Some(e), Some(i)) => format!("epoch {e} iteration {i}"),
            (None, Some(i)) => format!("iteration {i}"),
            _ => format!("record {records}"),
        };
        for (name, value) in &rec.metrics {
            if !value.is_finite() {
                return Stage::Fail(format!(
                    "{}: {name} = {value} at {} (rank {})",
                    path.display(),
                    at(),
                    rec.rank
                ));
            }
            if let Some(i) = metrics.iter().position(|m| m == name) {
                seen[i] = true;
            }
            match name.as_str() {
                "train.loss" => losses += 1,
                "train.ips" if *value <= 0.0 => {
                    return Stage::Fail(format!(
                        "{}: train.ips = {value} at {} (must be > 0)",
                        path.display(),
                        at()
                    ))
                }
                "train.ips" => ips_ok += 1,
                _ => {}
            }
        }
    }
    if losses == 0 {
        return Stage::Fail(format!(
            "{}: no train.loss in {records} records",
            path.display()
        ));
    }
    if ips_ok == 0 {
        return Stage::Fail(format!(
            "{}: no train.ips in {records} records",
            path.display()
        ));
    }
    let missing: Vec<&str> = metrics
        .iter()
        .zip(&seen)
        .filter(|(_, s)| !**s)
        .map(|(m, _)| m.as_str())
        .collect();
    if !missing.is_empty() {
        return Stage::Fail(format!(
            "{}: metrics listed in model.yaml never logged: {}",
            path.display(),
            missing.join(", ")
        ));
    }
    Stage::Pass(format!("{records} records, {losses} train.loss"))
}

/// A new, kept directory `modelzoo-ci.XXXXXX` under the system temp dir, for when the user
/// names none: the console logs must outlive the run.
pub fn new_work_dir() -> Result<PathBuf, CiError> {
    let base = std::env::temp_dir();
    tempfile::Builder::new()
        .prefix("modelzoo-ci.")
        .tempdir_in(&base)
        .map(|d| d.keep())
        .map_err(|error| CiError::WorkDir { path: base, error })
}

/// Writes a report file atomically (see [`modelzoo_support::write_atomic`]).
pub fn write_atomic(path: &Path, text: &str) -> Result<(), CiError> {
    modelzoo_support::write_atomic(path, text.as_bytes()).map_err(|error| CiError::Write {
        path: path.to_path_buf(),
        error,
    })
}
