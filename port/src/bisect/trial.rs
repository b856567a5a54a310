//! One trial: the command run in a fresh directory with a fallback set, its losses watched as
//! they come and the run cut short at its first step past the tolerance, then judged against
//! the baseline under the rule.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use modelzoo_support::kit::{python_path_with, Kit};
use modelzoo_support::process::{self, Job, RunOutcome};
use validator::compare;

use super::types::{
    env_line, Baseline, BisectError, Options, Rule, Trial, FALLBACK_ENV, INVENTORY_ENV,
};
use crate::{copy, runs::fresh_dir, steps, PortError};

/// Runs trials and keeps count.
pub(super) struct Runner<'a> {
    pub(super) opts: &'a Options,
    pub(super) baseline: &'a Baseline,
    pub(super) cancel: &'a AtomicBool,
    pub(super) trials: Vec<Trial>,
    pub(super) started: Instant,
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
    pub(super) fn runs(&self) -> usize {
        self.trials.len()
    }

    /// Why no further trial may start, if so.
    pub(super) fn spent(&self) -> Option<String> {
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
    pub(super) fn trial(
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

#[cfg(test)]
mod tests {
    use super::*;

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
