//! `modelzoo bisect`: which ops, run on the CPU instead of the device (the runtime's
//! `TORCH_SDAA_FALLBACK_OPS`), make a run match its baseline. The command runs once on the
//! device with the op inventory on, which names the candidates (ops with a device output that
//! are neither views nor composites); then adaptive group testing over them finds a minimal set:
//! for each culprit one run checks whether the culprits found so far heal the run, and a binary
//! search over a prefix of the remaining candidates finds the next one — k culprits among n cost
//! about k·(log2 n + 1) + 3 runs. Each trial runs in a fresh directory of its own and is cut
//! short once its verdict is known (a step past the tolerance: its process group is killed).
//!
//! The run is assumed to match more as more ops fall back (on the emulator, falling back an op
//! only removes device-side effects), so the set found is minimal: no op of it can be left out.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use modelzoo_support::kit::{python_path_with, Kit};
use modelzoo_support::process::{self, Job, RunOutcome};
use serde::Serialize;
use validator::compare;

use crate::{copy, losses, runs::fresh_dir, steps, Port, PortError, Verdict, WORK_DIR};

/// Why a bisection could not run (exit 2), or was interrupted (exit 130).
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    #[error(transparent)]
    Port(#[from] PortError),
    #[error("interrupted")]
    Interrupted,
}

/// The runtime's variable: the ops to run on the CPU, separated by commas.
pub const FALLBACK_ENV: &str = "TORCH_SDAA_FALLBACK_OPS";
/// The emulator's op inventory directory variable.
const INVENTORY_ENV: &str = "SDAA_EMULATOR_OP_INVENTORY";
/// The report bisect writes into its work directory.
pub const JSON_FILE: &str = "bisect.json";

/// How a trial is judged against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The port's step rule (port/src/steps.rs): every step within float noise of an fp32 CPU
    /// baseline; a trial stops at its first step past the tolerance.
    Step,
    /// The ModelZoo's 1% rule on the final loss (validator::compare): judged at the end.
    Rel1,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::Step => "step-by-step",
            Rule::Rel1 => "1% rule",
        }
    }
}

/// What `modelzoo bisect` is asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The baseline's log (any format the loss reader knows).
    pub baseline: PathBuf,
    /// The command, run as is (no shell) in each trial's directory.
    pub command: Vec<String>,
    /// None: the step rule for an fp32 CPU baseline (or one that does not say), else the 1% rule.
    pub rule: Option<Rule>,
    pub max_runs: Option<usize>,
    pub time_budget: Option<Duration>,
    /// Copied into each trial's directory, where the command runs; None: an empty directory.
    pub src: Option<PathBuf>,
    /// Where the trials and the report go.
    pub work: PathBuf,
    /// The log the command writes (relative to its directory), when the losses are not in its
    /// console output.
    pub log: Option<PathBuf>,
    /// The loss metric to judge, when the log prints several.
    pub loss_key: Option<String>,
    /// Longest one trial may take.
    pub timeout: Duration,
    pub kit: Option<Kit>,
    /// Set in every trial's environment besides the kit's own.
    pub extra_env: Vec<(String, String)>,
}

/// How a bisection ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// A set whose fallback makes the run match; `minimal` is false when a budget stopped the
    /// search first (the best set so far: it matches, but may hold ops that are not needed).
    Found { ops: Vec<String>, minimal: bool },
    /// The run matches the baseline without any fallback.
    NothingToBisect,
    /// Falling back every candidate still does not match: the script itself computes something
    /// else on the device.
    DeviceOnlyBug,
    /// The budget ran out before any set was seen to match.
    BudgetSpent,
}

/// One trial.
#[derive(Debug, Clone, Serialize)]
pub struct Trial {
    pub fallback: Vec<String>,
    pub matched: bool,
    /// Why it does not match (the first step past the tolerance, a crash, …).
    pub why: String,
    /// Stopped as soon as its verdict was known.
    pub cut_short: bool,
    pub seconds: f64,
    pub dir: PathBuf,
    pub console: PathBuf,
}

/// What `modelzoo bisect` found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub outcome: Outcome,
    pub rule: Rule,
    pub metric: String,
    pub candidates: Vec<String>,
    pub runs: usize,
    pub seconds: f64,
    /// Why the search stopped early (`--max-runs`, `--time-budget`), when it did.
    pub stopped: Option<String>,
    pub trials: Vec<Trial>,
    pub summary: String,
}

impl Report {
    /// 0: a set found; 1: nothing to bisect, a device-only bug, or no set within the budget.
    pub fn exit_code(&self) -> u8 {
        match self.outcome {
            Outcome::Found { .. } => 0,
            _ => 1,
        }
    }
}

/// The environment line that applies `ops` (names without `aten::`, as the runtime takes them).
pub fn env_line(ops: &[String]) -> String {
    let names: Vec<&str> = ops
        .iter()
        .map(|op| op.strip_prefix("aten::").unwrap_or(op))
        .collect();
    format!("{FALLBACK_ENV}={}", names.join(","))
}

/// What a probe of one fallback set says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The run matches the baseline with this set fallen back.
    Heals,
    DoesNot,
    /// No more trials (the budget is spent), with why.
    Stop(String),
}

/// The search's result: the set, whether it is minimal, and why it stopped early if it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub ops: Vec<String>,
    pub minimal: bool,
    pub stopped: Option<String>,
}

/// Adaptive group testing over `candidates`, given that falling back all of them heals and
/// falling back none does not (both already seen). Each round probes the culprits found so far
/// (skipped while there are none), then binary-searches the shortest prefix of the remaining
/// candidates that heals together with them: its last op is a culprit. k culprits among n
/// take at most k·(ceil(log2 n) + 1) probes; under a monotone probe the set is minimal.
pub fn find_culprits(candidates: &[String], probe: &mut dyn FnMut(&[String]) -> Probe) -> Found {
    let mut found: Vec<String> = Vec::new();
    let mut rest: Vec<String> = candidates.to_vec();
    let with = |found: &[String], part: &[String]| -> Vec<String> {
        found.iter().chain(part.iter()).cloned().collect()
    };
    loop {
        // Invariant: found ∪ rest heals.
        if rest.is_empty() {
            return Found {
                ops: found,
                minimal: true,
                stopped: None,
            };
        }
        if !found.is_empty() {
            match probe(&found) {
                Probe::Heals => {
                    return Found {
                        ops: found,
                        minimal: true,
                        stopped: None,
                    }
                }
                Probe::DoesNot => {}
                Probe::Stop(why) => {
                    return Found {
                        ops: with(&found, &rest),
                        minimal: false,
                        stopped: Some(why),
                    }
                }
            }
        }
        // The shortest prefix rest[..j] (j >= 1) with found ∪ rest[..j] healing.
        let (mut lo, mut hi) = (1, rest.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match probe(&with(&found, &rest[..mid])) {
                Probe::Heals => hi = mid,
                Probe::DoesNot => lo = mid + 1,
                Probe::Stop(why) => {
                    return Found {
                        ops: with(&found, &rest[..hi]),
                        minimal: false,
                        stopped: Some(why),
                    }
                }
            }
        }
        found.push(rest[lo - 1].clone());
        rest.truncate(lo - 1);
    }
}

/// The baseline's loss series and the rule it calls for.
struct Baseline {
    series: steps::Series,
    metric: String,
    rule: Rule,
}

fn read_baseline(opts: &Options) -> Result<Baseline, PortError> {
    let bad = |message: String| PortError::Input {
        path: opts.baseline.clone(),
        message,
    };
    let meta = std::fs::metadata(&opts.baseline)
        .map_err(|e| bad(format!("cannot read the baseline log: {e}")))?;
    if !meta.is_file() {
        return Err(bad(
            "the baseline log is not a regular file (give the log of the reference run)".into(),
        ));
    }
    let dir = opts.baseline.parent().unwrap_or(Path::new("."));
    let found = losses::find(dir, &opts.baseline, None, opts.loss_key.as_deref()).map_err(bad)?;
    let metric = found.metrics[0].clone();
    let series = steps::Series::read(&opts.baseline, &metric).map_err(bad)?;
    let rule = match opts.rule {
        Some(rule) => rule,
        None => {
            let facts = compare::read_series(&opts.baseline, "baseline", &metric, 0)
                .map(|s| s.facts)
                .unwrap_or_default();
            auto_rule(&facts)
        }
    };
    Ok(Baseline {
        series,
        metric,
        rule,
    })
}

/// The step rule for an fp32 CPU baseline — one whose log says device cpu (or names no device)
/// and no lower precision or AMP — else the 1% rule.
pub fn auto_rule(facts: &BTreeMap<String, String>) -> Rule {
    let said = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| facts.get(*k))
            .map(|v| v.trim().to_ascii_lowercase())
    };
    let cpu = said(&["device", "device_type"]).is_none_or(|d| d == "cpu");
    let fp32 = said(&["precision", "dtype"]).is_none_or(|p| p == "fp32" || p == "float32");
    let amp = said(&["amp", "autocast"]).is_some_and(|a| a == "true" || a == "1");
    if cpu && fp32 && !amp {
        Rule::Step
    } else {
        Rule::Rel1
    }
}

/// Runs trials and keeps count.
struct Runner<'a> {
    opts: &'a Options,
    baseline: &'a Baseline,
    cancel: &'a AtomicBool,
    trials: Vec<Trial>,
    started: Instant,
}

/// A trial's loss series so far (complete lines only), against the baseline's first steps:
/// Some(why) once a step is past the tolerance.
fn early_verdict(baseline: &steps::Series, source: &Path, snapshot: &Path) -> Option<String> {
    let bytes = std::fs::read(source).ok()?;
    let end = bytes.iter().rposition(|b| *b == b'\n')? + 1;
    std::fs::write(snapshot, &bytes[..end]).ok()?;
    let partial = steps::Series::read(snapshot, &baseline.metric).ok()?;
    if partial.points.len() > baseline.points.len() {
        return Some(format!(
            "it logged more values of `{}` than the baseline ({})",
            baseline.metric,
            baseline.points.len()
        ));
    }
    let head = steps::Series {
        metric: baseline.metric.clone(),
        points: baseline.points[..partial.points.len()].to_vec(),
    };
    match steps::judge(&head, &partial, 0.0).outcome {
        steps::Outcome::Fail(f) => Some(step_failure(&f)),
        _ => None,
    }
}

fn step_failure(f: &steps::StepFailure) -> String {
    format!(
        "{}: {} against the baseline's {} (difference {:.3e} > tolerance {:.3e})",
        f.step, f.candidate, f.baseline, f.difference, f.tolerance
    )
}

impl Runner<'_> {
    fn runs(&self) -> usize {
        self.trials.len()
    }

    /// Why no further trial may start, if so.
    fn spent(&self) -> Option<String> {
        if let Some(max) = self.opts.max_runs {
            if self.runs() >= max {
                return Some(format!("--max-runs {max} reached"));
            }
        }
        if let Some(budget) = self.opts.time_budget {
            if self.started.elapsed() >= budget {
                return Some(format!(
                    "--time-budget {} s spent",
                    budget.as_secs_f64().round()
                ));
            }
        }
        None
    }

    /// One run of the command with `fallback` on the CPU, in a fresh directory. `inventory`:
    /// the emulator writes its op inventory there (the run is then never cut short, since the
    /// inventory is written at exit).
    fn trial(
        &mut self,
        fallback: &[String],
        inventory: Option<&Path>,
    ) -> Result<Trial, BisectError> {
        let opts = self.opts;
        let label = format!("trial{:03}", self.runs() + 1);
        let runs = opts.work.join("trials").join(&label);
        fresh_dir(&runs)?;
        let dir = match &opts.src {
            Some(src) => {
                let name = src
                    .file_name()
                    .map_or_else(|| OsString::from("project"), |n| n.to_os_string());
                let dir = runs.join(name);
                std::fs::create_dir(&dir).map_err(|e| PortError::Copy {
                    path: dir.clone(),
                    message: e.to_string(),
                })?;
                copy::copy_tree(src, &dir, &[])?;
                dir
            }
            None => {
                let dir = runs.join("run");
                std::fs::create_dir(&dir).map_err(|e| PortError::Copy {
                    path: dir.clone(),
                    message: e.to_string(),
                })?;
                dir
            }
        };
        let console = opts.work.join("trials").join(format!("{label}.log"));
        let _ = std::fs::remove_file(&console);

        let mut command = Command::new(&opts.command[0]);
        command.args(&opts.command[1..]).current_dir(&dir);
        let kit_bin: Vec<PathBuf> = opts.kit.iter().filter_map(Kit::venv_bin).collect();
        if let Some(path) = process::prefixed_path(&kit_bin) {
            command.env("PATH", path);
        }
        let emulator: Vec<PathBuf> = opts.kit.iter().filter_map(Kit::emulator_python).collect();
        if let Some(pp) = python_path_with(&[], &emulator) {
            command.env("PYTHONPATH", pp);
        }
        if std::env::var_os("SDAA_HOME").is_none() {
            if let Some(home) = opts
                .kit
                .as_ref()
                .map(|k| k.root.join("target/sdaa-emulator"))
                .filter(|h| h.join("lib64").is_dir())
            {
                command.env("SDAA_HOME", home);
            }
        }
        command.env("PYTHONUNBUFFERED", "1");
        for (k, v) in &opts.extra_env {
            command.env(k, v);
        }
        if fallback.is_empty() {
            command.env_remove(FALLBACK_ENV);
        } else {
            let line = env_line(fallback);
            command.env(FALLBACK_ENV, &line[FALLBACK_ENV.len() + 1..]);
        }
        match inventory {
            Some(inv) => {
                fresh_dir(inv)?;
                command.env(INVENTORY_ENV, inv);
            }
            None => {
                command.env_remove(INVENTORY_ENV);
            }
        }
        eprintln!(
            "bisect: run {} with {} op(s) on the CPU, in {}",
            self.runs() + 1,
            fallback.len(),
            dir.display()
        );

        // The watcher reads the losses as they come and stops the run at the first step past
        // the tolerance (step rule only: the 1% rule needs the end; never the inventory run,
        // whose inventory is written at exit). The caller's cancel stops it too.
        let stop = AtomicBool::new(false);
        let done = AtomicBool::new(false);
        let source = match &opts.log {
            Some(log) => dir.join(log),
            None => console.clone(),
        };
        let snapshot = runs.join(format!(
            "watch-{}",
            source
                .file_name()
                .map_or_else(|| "log".into(), |n| n.to_string_lossy().into_owned())
        ));
        let watch = self.baseline.rule == Rule::Step && inventory.is_none();
        let (baseline, cancel) = (&self.baseline.series, self.cancel);
        let start = Instant::now();
        let (outcome, early) = std::thread::scope(|s| {
            let watcher = s.spawn(|| {
                let mut tick = 0u32;
                while !done.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(50));
                    if cancel.load(Ordering::SeqCst) {
                        stop.store(true, Ordering::SeqCst);
                        return None;
                    }
                    tick += 1;
                    if watch && tick.is_multiple_of(4) {
                        if let Some(why) = early_verdict(baseline, &source, &snapshot) {
                            stop.store(true, Ordering::SeqCst);
                            return Some(why);
                        }
                    }
                }
                None
            });
            let outcome = process::run(Job {
                command,
                timeout: opts.timeout,
                console: &console,
                kill_grace: Duration::from_secs(2),
                cancel: &stop,
            });
            done.store(true, Ordering::SeqCst);
            (outcome, watcher.join().unwrap_or(None))
        });
        let seconds = start.elapsed().as_secs_f64();
        if self.cancel.load(Ordering::SeqCst) {
            return Err(BisectError::Interrupted);
        }
        let (matched, why, cut_short) = match (&outcome, early) {
            (_, Some(why)) => (false, why, true),
            (RunOutcome::SpawnFailed(e), None) => {
                return Err(PortError::Input {
                    path: PathBuf::from(&opts.command[0]),
                    message: format!("cannot start the command: {e}"),
                }
                .into())
            }
            (outcome, None) => {
                let (matched, why) = self.judge(&source, outcome);
                (matched, why, false)
            }
        };
        let trial = Trial {
            fallback: fallback.to_vec(),
            matched,
            why,
            cut_short,
            seconds,
            dir,
            console,
        };
        eprintln!(
            "bisect: run {}: {}{}",
            self.runs() + 1,
            if trial.matched {
                "matches the baseline".to_string()
            } else {
                format!("does not match: {}", trial.why)
            },
            if trial.cut_short {
                " (stopped there)"
            } else {
                ""
            }
        );
        self.trials.push(trial.clone());
        Ok(trial)
    }

    /// A finished run against the baseline under the rule.
    fn judge(&self, source: &Path, outcome: &RunOutcome) -> (bool, String) {
        let ended = match outcome {
            RunOutcome::Exited { code: 0 } => String::new(),
            RunOutcome::Exited { code } => format!(" (it exited with {code})"),
            RunOutcome::Signalled { signal } => format!(" (killed by signal {signal})"),
            RunOutcome::TimedOut => format!(
                " (timed out after {} s)",
                self.opts.timeout.as_secs_f64().round()
            ),
            RunOutcome::Interrupted => " (interrupted)".to_string(),
            RunOutcome::SpawnFailed(e) => format!(" (could not start: {e})"),
        };
        let metric = &self.baseline.metric;
        match self.baseline.rule {
            Rule::Step => {
                let series = match steps::Series::read(source, metric) {
                    Ok(s) => s,
                    Err(e) => return (false, format!("no loss to judge: {e}{ended}")),
                };
                match steps::judge(&self.baseline.series, &series, 0.0).outcome {
                    steps::Outcome::Pass if ended.is_empty() => (true, String::new()),
                    steps::Outcome::Pass => (false, format!("its losses match, but{ended}")),
                    steps::Outcome::Fail(f) => (false, step_failure(&f)),
                    steps::Outcome::StepsDiffer { why } => (false, format!("{why}{ended}")),
                }
            }
            Rule::Rel1 => {
                let options = compare::Options {
                    metric: metric.clone(),
                    metric_fallback: false,
                    ..compare::Options::default()
                };
                let cmp = compare::read_series(&self.opts.baseline, "baseline", metric, 0)
                    .and_then(|b| Ok((b, compare::read_series(source, "candidate", metric, 0)?)))
                    .and_then(|(b, c)| compare::compare(b, c, &options));
                match cmp {
                    Ok(cmp) if cmp.verdict.pass && ended.is_empty() => (true, String::new()),
                    Ok(cmp) => (false, format!("{}{ended}", cmp.verdict.reason)),
                    Err(e) => (false, format!("cannot be compared: {e}{ended}")),
                }
            }
        }
    }
}

/// The candidates the emulator's op inventory names (`fallback_candidates`), sorted.
fn read_candidates(inventory: &Path) -> Result<Vec<String>, String> {
    let file = inventory.join("op_inventory.rank0.json");
    let bytes = std::fs::read(&file).map_err(|e| {
        format!(
            "the run wrote no op inventory ({}: {e}): it did not run on the SDAA emulator's device (give the command that runs on sdaa: `--device sdaa`, or a script that imports torch_sdaa)",
            file.display()
        )
    })?;
    let json: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: not an op inventory: {e}", file.display()))?;
    let list = json["fallback_candidates"].as_array().ok_or_else(|| {
        format!(
            "{}: no `fallback_candidates` (an emulator older than bisect: run scripts/build-emulator.sh)",
            file.display()
        )
    })?;
    let mut ops: Vec<String> = list
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    ops.sort();
    Ok(ops)
}

/// Runs the bisection and writes `<work>/bisect.json`. Err: it could not run (bad input, the
/// command does not start, the first run logs no loss or writes no inventory), or interrupted.
pub fn run(opts: &Options, cancel: &AtomicBool) -> Result<Report, BisectError> {
    if opts.command.is_empty() {
        return Err(PortError::Input {
            path: PathBuf::from("--"),
            message: "no command to run: give it after `--`".into(),
        }
        .into());
    }
    if let Some(src) = &opts.src {
        if !src.is_dir() {
            return Err(PortError::Input {
                path: src.clone(),
                message: "--src must be a directory (the project copied into each trial)".into(),
            }
            .into());
        }
    }
    let baseline = read_baseline(opts)?;
    std::fs::create_dir_all(&opts.work).map_err(|e| PortError::Input {
        path: opts.work.clone(),
        message: format!("cannot create the work directory: {e}"),
    })?;
    let mut runner = Runner {
        opts,
        baseline: &baseline,
        cancel,
        trials: Vec::new(),
        started: Instant::now(),
    };
    let inventory = opts.work.join("inventory");
    let first = runner.trial(&[], Some(&inventory))?;
    let could_not = |why: String| PortError::Input {
        path: first.console.clone(),
        message: why,
    };
    if !first.matched && first.why.starts_with("no loss to judge") {
        return Err(could_not(format!(
            "the first run (no fallback) cannot be judged: {}",
            first.why
        ))
        .into());
    }
    let candidates = if first.matched {
        Vec::new()
    } else {
        read_candidates(&inventory).map_err(could_not)?
    };
    let mut stopped = None;
    let outcome = if first.matched {
        Outcome::NothingToBisect
    } else if candidates.is_empty() {
        Outcome::DeviceOnlyBug
    } else if let Some(why) = runner.spent() {
        stopped = Some(why);
        Outcome::BudgetSpent
    } else if !runner.trial(&candidates, None)?.matched {
        Outcome::DeviceOnlyBug
    } else {
        let mut failure: Option<BisectError> = None;
        let found = find_culprits(&candidates, &mut |set| {
            if let Some(why) = runner.spent() {
                return Probe::Stop(why);
            }
            match runner.trial(set, None) {
                Ok(t) if t.matched => Probe::Heals,
                Ok(_) => Probe::DoesNot,
                Err(e) => {
                    failure = Some(e);
                    Probe::Stop("a trial could not run".into())
                }
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
        stopped = found.stopped;
        let mut ops = found.ops;
        ops.sort();
        Outcome::Found {
            ops,
            minimal: found.minimal,
        }
    };
    let seconds = runner.started.elapsed().as_secs_f64();
    let runs = runner.runs();
    let summary = summarize(
        &outcome,
        &candidates,
        runs,
        seconds,
        stopped.as_deref(),
        &first,
    );
    let report = Report {
        outcome,
        rule: baseline.rule,
        metric: baseline.metric.clone(),
        candidates,
        runs,
        seconds,
        stopped,
        trials: runner.trials,
        summary,
    };
    let json = serde_json::to_vec_pretty(&report).unwrap_or_default();
    modelzoo_support::write_atomic(&opts.work.join(JSON_FILE), &json).map_err(|e| {
        PortError::Input {
            path: opts.work.join(JSON_FILE),
            message: format!("cannot write the report: {e}"),
        }
    })?;
    Ok(report)
}

/// `modelzoo port --bisect`: after a port that drifted (its losses left the original's), bisect
/// its command on copies of the port against the original's loss log, with the port's rule;
/// the trials and `bisect.json` go to `DST/.modelzoo-port/bisect`. None when the port did not
/// drift (nothing a fallback could heal: it passed, crashed, or could not be judged).
pub fn after_port(
    port: &Port,
    log: Option<PathBuf>,
    loss_key: Option<String>,
    timeout: Duration,
    kit: Option<Kit>,
    cancel: &AtomicBool,
) -> Option<Result<Report, BisectError>> {
    if port.verdict != Verdict::Drift {
        return None;
    }
    let Some(baseline) = port.baseline.loss_log.clone() else {
        return Some(Err(PortError::Input {
            path: port.out.clone(),
            message: "the original's run left no loss log to bisect against".into(),
        }
        .into()));
    };
    if port.loss_note.is_some() {
        return Some(Err(PortError::Input {
            path: baseline,
            message: "the losses were read from the port's backward() records (the script prints none); bisect reads printed losses only: make the script print its loss, then run `modelzoo bisect`".into(),
        }
        .into()));
    }
    let rule = match port.rule.as_ref().map(|r| r.name.as_str()) {
        Some("step-by-step") => Rule::Step,
        _ => Rule::Rel1,
    };
    let mut extra_env = Vec::new();
    if port.baseline.device.starts_with("cpu")
        && std::env::var_os("SDAA_EMULATOR_DEVICES").is_none()
    {
        // As many devices as the CPU baseline reported, as the port's own run had.
        extra_env.push(("SDAA_EMULATOR_DEVICES".to_string(), "local".to_string()));
    }
    let opts = Options {
        baseline,
        command: port.command.clone(),
        rule: Some(rule),
        max_runs: None,
        time_budget: None,
        src: Some(port.out.clone()),
        work: port.out.join(WORK_DIR).join("bisect"),
        log,
        loss_key,
        timeout,
        kit,
        extra_env,
    };
    Some(run(&opts, cancel))
}

/// The report in words, for the console.
fn summarize(
    outcome: &Outcome,
    candidates: &[String],
    runs: usize,
    seconds: f64,
    stopped: Option<&str>,
    first: &Trial,
) -> String {
    let took = format!("{runs} run(s), {seconds:.0} s");
    match outcome {
        Outcome::NothingToBisect => format!(
            "nothing to bisect: the run matches the baseline without any fallback ({took})"
        ),
        Outcome::DeviceOnlyBug if candidates.is_empty() => format!(
            "no fallback can heal this run: it does not match the baseline ({}) and used no op on the device that could fall back — the difference is in the script itself ({took})",
            first.why
        ),
        Outcome::DeviceOnlyBug => format!(
            "no fallback heals this run: with all {} candidate ops on the CPU it still does not match the baseline — a device-only bug in the script itself (a branch on the device type, a device-only setting), not in an op ({took})",
            candidates.len()
        ),
        Outcome::BudgetSpent => format!(
            "no set found: {} before any run with fallbacks ({took})",
            stopped.unwrap_or("the budget ran out")
        ),
        Outcome::Found { ops, minimal } => {
            let list = ops.join(", ");
            let mut s = if *minimal {
                format!(
                    "found {} op(s) among {} candidates whose fallback makes the run match the baseline: {list} ({took})",
                    ops.len(),
                    candidates.len()
                )
            } else {
                format!(
                    "best set so far, not minimal ({}): {} op(s) among {} candidates whose fallback makes the run match: {list} ({took})",
                    stopped.unwrap_or("stopped"),
                    ops.len(),
                    candidates.len()
                )
            };
            s.push('\n');
            s.push_str(&env_line(ops));
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("aten::op{i:02}")).collect()
    }

    /// A fake run: it matches when every culprit is on the CPU; counts the probes.
    fn search(n: usize, culprits: &[usize], max: Option<usize>) -> (Found, usize) {
        let ops = names(n);
        let bad: Vec<String> = culprits.iter().map(|&i| ops[i].clone()).collect();
        let mut probes = 0;
        let found = find_culprits(&ops, &mut |set| {
            if max.is_some_and(|m| probes >= m) {
                return Probe::Stop("--max-runs reached".into());
            }
            probes += 1;
            if bad.iter().all(|b| set.contains(b)) {
                Probe::Heals
            } else {
                Probe::DoesNot
            }
        });
        (found, probes)
    }

    #[test]
    fn finds_exactly_the_culprits_within_the_bound() {
        for n in [1usize, 2, 3, 7, 16, 28, 50, 64] {
            for k in 1..=3.min(n) {
                // Spread the culprits: first, last and middle positions.
                let culprits: Vec<usize> = [0, n - 1, n / 2][..k].to_vec();
                let mut culprits = culprits;
                culprits.sort();
                culprits.dedup();
                let (found, probes) = search(n, &culprits, None);
                let mut want: Vec<String> = culprits.iter().map(|&i| names(n)[i].clone()).collect();
                let mut got = found.ops.clone();
                want.sort();
                got.sort();
                assert_eq!(got, want, "n={n} culprits={culprits:?}");
                assert!(found.minimal && found.stopped.is_none());
                // Plus the two runs `run` makes first (no fallback, all candidates).
                let runs = probes + 2;
                let k = culprits.len() as f64;
                let bound = 2.0 * k * (n as f64).log2() + 4.0;
                assert!(
                    runs as f64 <= bound.max(4.0),
                    "n={n} k={k}: {runs} runs > {bound}"
                );
            }
        }
    }

    #[test]
    fn two_among_fifty_take_few_runs() {
        let (found, probes) = search(50, &[7, 33], None);
        assert_eq!(found.ops.len(), 2);
        assert!(probes + 2 <= 2 * 2 * 6 + 4, "{probes}");
    }

    #[test]
    fn a_budget_returns_the_best_set_so_far() {
        let (found, probes) = search(32, &[3, 20], Some(3));
        assert_eq!(probes, 3);
        assert!(!found.minimal);
        assert_eq!(found.stopped.as_deref(), Some("--max-runs reached"));
        // The best set so far still heals: both culprits are in it.
        assert!(found.ops.contains(&names(32)[3]) && found.ops.contains(&names(32)[20]));
        assert!(found.ops.len() < 32);
    }

    #[test]
    fn env_line_has_the_runtime_names() {
        let ops = vec![
            "aten::addmm".to_string(),
            "aten::native_batch_norm".to_string(),
        ];
        assert_eq!(
            env_line(&ops),
            "TORCH_SDAA_FALLBACK_OPS=addmm,native_batch_norm"
        );
    }

    #[test]
    fn auto_rule_is_the_step_rule_for_fp32_cpu_only() {
        let facts = |kv: &[(&str, &str)]| {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(auto_rule(&facts(&[])), Rule::Step);
        assert_eq!(
            auto_rule(&facts(&[("device", "cpu"), ("precision", "fp32")])),
            Rule::Step
        );
        assert_eq!(auto_rule(&facts(&[("device", "cuda")])), Rule::Rel1);
        assert_eq!(
            auto_rule(&facts(&[("device", "cpu"), ("precision", "amp")])),
            Rule::Rel1
        );
    }

    #[test]
    fn early_verdict_stops_at_the_first_step_past_the_tolerance() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base.log");
        std::fs::write(
            &base,
            "step 1 loss 2.5000\nstep 2 loss 2.4000\nstep 3 loss 2.3000\n",
        )
        .unwrap();
        let baseline = steps::Series::read(&base, "loss").unwrap();
        let run = dir.path().join("run.log");
        let snap = dir.path().join("snap.log");
        // A matching prefix: no verdict yet; a half-written line is not read.
        std::fs::write(&run, "step 1 loss 2.5000\nstep 2 loss 2.9").unwrap();
        assert_eq!(early_verdict(&baseline, &run, &snap), None);
        std::fs::write(&run, "step 1 loss 2.5000\nstep 2 loss 2.9000\n").unwrap();
        let why = early_verdict(&baseline, &run, &snap).expect("a verdict at step 2");
        assert!(why.contains("2.9") && why.contains("2.4"), "{why}");
    }
}
