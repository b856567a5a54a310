//! `modelzoo-ci`: the PR functional check of the adaptation guide (§3.7). Two inputs:
//!
//! - this repository's `model.yaml` ([`ModelYaml`]): for each model, the layout check
//!   (`validator`), its short functional command under a timeout (`modelzoo_support::process`:
//!   stopped on timeout with everything it started), and a check of the log it wrote
//!   (`dllogger`'s reader): a finite `train.loss`, `train.ips` > 0, no NaN/inf, every listed
//!   metric present;
//! - the public ModelZoo's case file ([`ZooCases`], [`cases`]): each case run exactly as the
//!   ModelZoo's check runs it, `python <run_file> --nnodes … --<other> <value>` in its run_dir,
//!   its console read for tcap_dllogger `train.loss` lines.
//!
//! Commands run with the kit's Python and, without an SDAA card, on the kit's SDAA emulator,
//! labelled `sdaa (EMULATOR)` ([`env`]). A model's output directory is only ever emptied when CI
//! made it ([`workdir`]); every file read is checked to be a regular file first, and an
//! entry's timeout covers its run and its log check ([`logcheck`]).

pub mod cases;
pub mod env;
mod logcheck;
pub mod repeat;
pub mod report;
pub mod workdir;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use model_config::{ModelEntry, ModelYaml, ZooCases};
use modelzoo_support::kit::Kit;
use modelzoo_support::process::{self, Job, RunOutcome};
use serde::Serialize;

pub use env::{device_label, SdaaBackend};
pub use logcheck::{check_console, check_log};
pub use report::{render_junit, render_markdown, render_table};

/// Errors that stop the check before any model runs.
#[derive(Debug, thiserror::Error)]
pub enum CiError {
    #[error("unknown {what} `{name}` in --models; {file} lists: {}", valid.join(", "))]
    UnknownModel {
        /// `model` or `case`.
        what: &'static str,
        name: String,
        file: String,
        valid: Vec<String>,
    },
    #[error("`git {args}` in {} failed: {message}", dir.display())]
    Git {
        args: String,
        dir: PathBuf,
        message: String,
    },
    #[error(
        "--changed-since `{rev}`: not a commit in the git repository at {} ({message}); give a \
         branch, tag or commit, e.g. --changed-since origin/main",
        dir.display()
    )]
    BadRevision {
        rev: String,
        dir: PathBuf,
        message: String,
    },
    #[error("cannot create the work directory {}: {error}", path.display())]
    WorkDir {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A model's output directory holds what CI did not create: it is never emptied.
    #[error("{0}")]
    ForeignWorkDir(String),
    /// A report path that is not a new or regular file, or is one of the check's inputs.
    #[error(transparent)]
    Output(#[from] modelzoo_support::OutputPathError),
}

/// How to run the check.
#[derive(Debug, Clone)]
pub struct Options {
    /// Device passed to every command (`{device}`, or the ModelZoo case's `--device`); models
    /// not listing it are skipped.
    pub device: String,
    /// Models run at once.
    pub jobs: usize,
    /// Each model gets `<work_dir>/<name>/` as `{output_dir}`, with its console output in
    /// `console.log` there. CI only ever empties such a directory when it created it
    /// ([`workdir`]).
    pub work_dir: PathBuf,
    /// Directories put in front of PATH for the commands (where `run_<model>` binaries are),
    /// before the kit's `.venv/bin`.
    pub path_prefix: Vec<PathBuf>,
    /// The kit (its `.venv` and SDAA emulator), when found.
    pub kit: Option<Kit>,
    /// Where `sdaa` runs: a card, the kit's emulator, or nothing ([`SdaaBackend::detect`]).
    pub sdaa: SdaaBackend,
    /// Grace period between SIGTERM and SIGKILL on timeout.
    pub kill_grace: Duration,
    /// Set (e.g. from a SIGINT handler) to stop: the running commands' process groups are
    /// killed and no further model starts.
    pub cancel: Arc<AtomicBool>,
    /// `--runs N`: each model.yaml entry runs N times on `device`, each run log-checked
    /// ([`repeat`]); 1 is one run.
    pub runs: usize,
    /// `--baseline-device DEV`: the entry also runs `runs` times on DEV, and the final
    /// `train.loss` of both sides are compared across the runs ([`repeat`]).
    pub baseline_device: Option<String>,
}

impl Options {
    /// The device as every report names it (`sdaa (EMULATOR)` on the emulator).
    pub fn device_label(&self) -> String {
        device_label(&self.device, &self.sdaa)
    }

    /// The environment every command runs with ([`env::command_env`]).
    fn command_env(&self) -> Vec<(&'static str, std::ffi::OsString)> {
        env::command_env(
            &self.device,
            &self.path_prefix,
            self.kit.as_ref(),
            &self.sdaa,
        )
    }
}

/// The outcome of one stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", content = "detail", rename_all = "lowercase")]
pub enum Stage {
    Pass(String),
    Fail(String),
    Skip(String),
    /// Not part of this kind of check (a ModelZoo case has no layout stage: the ModelZoo's
    /// own check only runs the command); shown as `n/a`, neither a pass nor a skip.
    Omitted(String),
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
            Stage::Omitted(_) => "n/a",
        }
    }
    pub fn detail(&self) -> &str {
        match self {
            Stage::Pass(d) | Stage::Fail(d) | Stage::Skip(d) | Stage::Omitted(d) => d,
        }
    }
}

/// Everything the check found for one model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelResult {
    pub name: String,
    pub dir: PathBuf,
    /// The device it ran on as reports name it: `cpu`, `sdaa`, `sdaa (EMULATOR)`.
    pub device: String,
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
        let stages: Vec<&Stage> = [&self.layout, &self.run, &self.log]
            .into_iter()
            .filter(|s| !matches!(s, Stage::Omitted(_)))
            .collect();
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

/// Why a check that ran checked nothing, or `None` when something passed or failed: a PR check
/// that ran nothing must not look passed. `results` empty means nothing was selected.
pub fn nothing_checked(results: &[ModelResult]) -> Option<String> {
    if results.is_empty() {
        return Some("nothing was checked: no model was selected".into());
    }
    if results.iter().all(ModelResult::skipped) {
        let reasons: Vec<String> = results
            .iter()
            .map(|r| format!("{}: {}", r.name, report::skip_reason(r)))
            .collect();
        return Some(format!(
            "nothing was checked: every selected model was skipped ({})",
            reasons.join("; ")
        ));
    }
    None
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
                        what: "model",
                        name: name.clone(),
                        file: "model.yaml".into(),
                        valid: yaml.models.iter().map(|m| m.name.clone()).collect(),
                    })
                }
            }
        }
        return Ok(out);
    }
    if let Some(rev) = changed_since {
        let dirs: Vec<&str> = yaml.models.iter().map(|m| m.path.as_str()).collect();
        let changed = changed_dirs(&yaml.root, rev, &dirs)?;
        return Ok(yaml
            .models
            .iter()
            .zip(changed)
            .filter(|(_, c)| *c)
            .map(|(m, _)| m.clone())
            .collect());
    }
    Ok(yaml.models.clone())
}

/// For each of `dirs` (relative to `root`), whether a file under it changed since `rev`.
pub(crate) fn changed_dirs(root: &Path, rev: &str, dirs: &[&str]) -> Result<Vec<bool>, CiError> {
    let changed = changed_files(root, rev)?;
    Ok(dirs
        .iter()
        .map(|d| {
            let prefix = format!("{}/", d.trim_end_matches('/'));
            changed.iter().any(|f| f.starts_with(&prefix))
        })
        .collect())
}

/// Files changed between `rev` and the working tree (committed, staged or not), plus
/// untracked ones, relative to `root`. `rev` is a revision, never an option: it is resolved
/// to a commit first (`git rev-parse --verify --end-of-options <rev>^{commit}`), and a value
/// that is not one — `--output=FILE` included — is [`CiError::BadRevision`] before git runs
/// anything else with it.
pub fn changed_files(root: &Path, rev: &str) -> Result<Vec<String>, CiError> {
    let commit = resolve_commit(root, rev)?;
    let mut files = git(
        root,
        &[
            "diff",
            "--name-only",
            "--relative",
            "--end-of-options",
            &commit,
            "--",
        ],
    )?;
    files.extend(git(root, &["ls-files", "--others", "--exclude-standard"])?);
    Ok(files)
}

/// The commit `rev` names, as a full hash.
fn resolve_commit(root: &Path, rev: &str) -> Result<String, CiError> {
    let bad = |message: String| CiError::BadRevision {
        rev: rev.to_string(),
        dir: root.to_path_buf(),
        message,
    };
    if rev.is_empty() {
        return Err(bad("empty".into()));
    }
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("{rev}^{{commit}}"))
        .output()
        .map_err(|e| CiError::Git {
            args: "rev-parse".into(),
            dir: root.to_path_buf(),
            message: format!("cannot run git: {e}"),
        })?;
    let hash = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || hash.is_empty() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(bad(if stderr.is_empty() {
            "git rev-parse found no such commit".into()
        } else {
            stderr
        }));
    }
    Ok(hash)
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

/// Checks every entry, `opts.jobs` at a time; results in the order of `entries`. Refuses
/// ([`CiError::ForeignWorkDir`]) before anything runs when the output directory of a model
/// that will run holds files CI did not create.
pub fn run_all(
    yaml: &ModelYaml,
    entries: &[ModelEntry],
    opts: &Options,
) -> Result<Vec<ModelResult>, CiError> {
    let out_dirs: Vec<PathBuf> = entries
        .iter()
        .filter(|e| e.devices.iter().any(|d| d == &opts.device))
        .flat_map(|e| {
            std::iter::once(out_dir(opts, &e.name)).chain(repeat::extra_dirs(opts, &e.name))
        })
        .collect();
    prepare_work_dir(opts, &out_dirs)?;
    Ok(pool(
        entries.len(),
        opts,
        |i| check_model(yaml, &entries[i], opts),
        |i| not_run(yaml, &entries[i], opts),
    ))
}

/// Creates the work directory and refuses one whose model directories are not CI's.
pub(crate) fn prepare_work_dir(opts: &Options, out_dirs: &[PathBuf]) -> Result<(), CiError> {
    std::fs::create_dir_all(&opts.work_dir).map_err(|error| CiError::WorkDir {
        path: opts.work_dir.clone(),
        error,
    })?;
    match workdir::first_foreign(out_dirs) {
        Some(message) => Err(CiError::ForeignWorkDir(message)),
        None => Ok(()),
    }
}

/// Runs `check(i)` for `i` in `0..n`, `opts.jobs` at a time, results in order; once
/// `opts.cancel` is set, the rest get `not_run(i)`.
pub(crate) fn pool(
    n: usize,
    opts: &Options,
    check: impl Fn(usize) -> ModelResult + Sync,
    not_run: impl Fn(usize) -> ModelResult + Sync,
) -> Vec<ModelResult> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(vec![None; n]);
    let jobs = opts.jobs.clamp(1, n.max(1));
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    break;
                }
                let r = if opts.cancel.load(Ordering::SeqCst) {
                    not_run(i)
                } else {
                    check(i)
                };
                if let Ok(mut all) = results.lock() {
                    all[i] = Some(r);
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.into_iter().flatten().collect()
}

/// `<work_dir>/<name>`, absolute: the command runs in the model's directory, so a relative
/// `{output_dir}` would put its output somewhere other than the directory CI clears and reads.
pub(crate) fn out_dir(opts: &Options, name: &str) -> PathBuf {
    let dir = opts.work_dir.join(name);
    std::path::absolute(&dir).unwrap_or(dir)
}

/// A model the check never got to (interrupted before it started).
fn not_run(yaml: &ModelYaml, entry: &ModelEntry, opts: &Options) -> ModelResult {
    let skip = || Stage::Skip("not run: interrupted".into());
    let out_dir = out_dir(opts, &entry.name);
    ModelResult {
        name: entry.name.clone(),
        dir: yaml.model_dir(entry),
        device: opts.device_label(),
        layout: skip(),
        run: skip(),
        log: skip(),
        command: entry.command_for(&opts.device, &out_dir),
        console: out_dir.join("console.log"),
        seconds: 0.0,
    }
}

/// The three stages for one model. The entry's `timeout` covers all of it: the layout check,
/// the command (its process group killed when the time runs out) and the log check.
pub fn check_model(yaml: &ModelYaml, entry: &ModelEntry, opts: &Options) -> ModelResult {
    let started = Instant::now();
    let deadline = started.checked_add(Duration::from_secs(entry.timeout));
    let dir = yaml.model_dir(entry);
    tracing::info!(model = %entry.name, dir = %dir.display(), "checking");
    let layout = layout_stage(yaml, &dir);
    let out_dir = out_dir(opts, &entry.name);
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
    } else if let Err(why) = entry.check_log() {
        // model.yaml refuses such a log; an entry built in code gets the same answer here,
        // before anything runs.
        (
            Stage::Skip("not run: invalid `log`".into()),
            Stage::Fail(why),
        )
    } else if let Err(why) = workdir::fresh(&out_dir) {
        // A fresh output directory, so a log left by an earlier run cannot pass for this one.
        (Stage::Fail(why), Stage::Skip("not run".into()))
    } else {
        let mut cmd = process::shell(&command, &dir, &[]);
        cmd.envs(opts.command_env());
        let outcome = run_job(cmd, &console, deadline, opts);
        let run = run_stage(&outcome, entry.timeout, &console, "sh -c");
        let log = if outcome == RunOutcome::Interrupted {
            Stage::Skip("not checked: interrupted".into())
        } else if outcome == RunOutcome::TimedOut {
            Stage::Skip("not checked: the run used up the entry's timeout".into())
        } else {
            let path = entry.log_path(&dir, &out_dir);
            let metrics = entry.metrics.clone();
            log_stage(deadline, entry.timeout, &path, move |p| {
                check_log(p, &metrics)
            })
        };
        if repeat::asked(opts) && !run.failed() && matches!(log, Stage::Pass(_)) {
            repeat::across_runs(yaml, entry, opts, entry.log_path(&dir, &out_dir))
        } else {
            (run, log)
        }
    };
    ModelResult {
        name: entry.name.clone(),
        dir,
        device: opts.device_label(),
        layout,
        run,
        log,
        command,
        console,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Runs `command` with stdout and stderr to `console`, until `deadline`.
pub(crate) fn run_job(
    command: std::process::Command,
    console: &Path,
    deadline: Option<Instant>,
    opts: &Options,
) -> RunOutcome {
    let timeout = deadline.map_or(Duration::MAX, |d| {
        d.saturating_duration_since(Instant::now())
    });
    process::run(Job {
        command,
        timeout,
        console,
        kill_grace: opts.kill_grace,
        cancel: &opts.cancel,
    })
}

/// The run stage from how the command ended; `what` names the program for a failed start.
pub(crate) fn run_stage(outcome: &RunOutcome, timeout: u64, console: &Path, what: &str) -> Stage {
    let tail = || logcheck::console_tail(console);
    match outcome {
        RunOutcome::Exited { code: 0 } => Stage::Pass(String::new()),
        RunOutcome::Exited { code } => {
            Stage::Fail(format!("exit status {code}; last output: {}", tail()))
        }
        RunOutcome::Signalled { signal } => Stage::Fail(format!(
            "killed by signal {signal}; last output: {}",
            tail()
        )),
        RunOutcome::TimedOut => Stage::Fail(format!(
            "timed out after {timeout} s (process group killed); last output: {}",
            tail()
        )),
        RunOutcome::Interrupted => Stage::Fail(format!(
            "interrupted (process group killed); last output: {}",
            tail()
        )),
        RunOutcome::SpawnFailed(e) => Stage::Fail(format!("cannot start `{what}`: {e}")),
    }
}

/// The log check of `path` by `check`, within what is left until `deadline`.
pub(crate) fn log_stage(
    deadline: Option<Instant>,
    timeout: u64,
    path: &Path,
    check: impl FnOnce(&Path) -> Stage + Send + 'static,
) -> Stage {
    let owned = path.to_path_buf();
    logcheck::before(deadline, move || check(&owned)).unwrap_or_else(|| {
        Stage::Fail(format!(
            "{}: not read to the end before the entry's timeout of {timeout} s ran out; stopped waiting",
            path.display()
        ))
    })
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

/// A model.yaml of either schema, told apart by its shape
/// ([`model_config::zoo_cases::detect`]).
#[derive(Debug, Clone)]
pub enum Index {
    /// This repository's (`models:`).
    Models(ModelYaml),
    /// The public ModelZoo's case list.
    Cases(ZooCases),
}

/// Why a model.yaml cannot be used (exit 2): its own loader's error, or neither schema.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Models(#[from] model_config::ModelYamlError),
    #[error(transparent)]
    Cases(#[from] model_config::ZooCasesError),
    #[error("{}: {why}", path.display())]
    Neither { path: PathBuf, why: String },
}

impl Index {
    /// Reads `path` (a regular file only: a FIFO is an error naming it, never a hang) and
    /// loads it in the schema its shape shows; a case file must break no rule.
    pub fn load(path: &Path) -> Result<Index, IndexError> {
        let text = model_config::files::read_to_string(path).map_err(|error| {
            model_config::ModelYamlError::Read {
                path: path.to_path_buf(),
                error,
            }
        })?;
        match model_config::zoo_cases::detect(&text) {
            Ok(model_config::IndexFormat::ModelYaml) => {
                Ok(Index::Models(ModelYaml::parse(&text, path)?))
            }
            Ok(model_config::IndexFormat::ZooCases) => Ok(Index::Cases(
                ZooCases::inspect_text(&text, path).into_valid()?,
            )),
            Err(why) => Err(IndexError::Neither {
                path: path.to_path_buf(),
                why,
            }),
        }
    }
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

/// Writes a report file (`--junit`, `--md`): checked first
/// ([`modelzoo_support::check_output_path`]: absent or a regular file, none of `inputs` — the
/// model.yaml and the model directories), then written atomically. What is at a path that
/// fails the check is left as it is.
pub fn write_report(path: &Path, text: &str, inputs: &[&Path]) -> Result<(), CiError> {
    modelzoo_support::write_report(path, text.as_bytes(), inputs).map_err(CiError::Output)
}
