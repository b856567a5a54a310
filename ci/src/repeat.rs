//! `modelzoo ci --runs N [--baseline-device DEV]`: a model.yaml entry checked across several
//! runs. Its command runs N times on `--device` (the same command; run 1 in
//! `<work-dir>/<model>/`, run k in `<work-dir>/<model>.run<k>/`), and every run must pass the
//! log check. With `--baseline-device DEV` it also runs N times with `{device}` = DEV
//! (`<work-dir>/<model>.<DEV>.run<k>/`), and the runs' final `train.loss` are compared with
//! `validator::compare::compare_runs`: Welch's one-sided t-test (3 runs a side or more) of
//! "the device is worse by at most the 1% margin", the per-pair 1% rule below 3. The outcome
//! is the log stage's: what the check already judges (a log), extended to several runs and to
//! the loss comparison the ModelZoo's acceptance asks for.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use model_config::{ModelEntry, ModelYaml};
use modelzoo_support::process::{self, RunOutcome};
use validator::compare::{compare_runs, verdict_line};

use crate::{env, log_stage, logcheck, out_dir, run_job, run_stage, workdir, Options, Stage};

/// The metric compared across runs: the loss the log check requires.
pub const METRIC: &str = "train.loss";

/// Most runs a side `--runs` takes.
pub const MAX_RUNS: usize = 100;

/// The output directory of run `k` (1-based) on `device` of model `name`: run 1 on `--device`
/// is the model's usual one.
pub fn run_dir(opts: &Options, name: &str, device: &str, k: usize) -> PathBuf {
    if device == opts.device && k == 1 {
        out_dir(opts, name)
    } else if device == opts.device {
        out_dir(opts, &format!("{name}.run{k}"))
    } else {
        out_dir(opts, &format!("{name}.{device}.run{k}"))
    }
}

/// Every output directory the runs of `name` use beyond its usual one (for the work
/// directory's check before anything runs).
pub fn extra_dirs(opts: &Options, name: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = (2..=opts.runs)
        .map(|k| run_dir(opts, name, &opts.device, k))
        .collect();
    if let Some(b) = &opts.baseline_device {
        dirs.extend((1..=opts.runs).map(|k| run_dir(opts, name, b, k)));
    }
    dirs
}

/// Whether `opts` asks for more than the one run of today's check.
pub fn asked(opts: &Options) -> bool {
    opts.runs > 1 || opts.baseline_device.is_some()
}

/// The (run, log) stages of an entry across runs, after its first run on `--device` passed
/// both (its log at `first_log`). Each further run gets the entry's timeout of its own.
pub fn across_runs(
    yaml: &ModelYaml,
    entry: &ModelEntry,
    opts: &Options,
    first_log: PathBuf,
) -> (Stage, Stage) {
    let n = opts.runs.max(1);
    let dir = yaml.model_dir(entry);
    let mut device_logs = vec![first_log];
    for k in 2..=n {
        match one_run(entry, opts, &dir, &opts.device, k) {
            Ok(log) => device_logs.push(log),
            Err((run, log)) => {
                return (
                    prefix(run, &format!("run {k} of {n}")),
                    prefix(log, &format!("run {k} of {n}")),
                )
            }
        }
    }
    let Some(base) = &opts.baseline_device else {
        return (
            Stage::Pass(String::new()),
            Stage::Pass(format!(
                "each of {n} runs passed the log check (no --baseline-device: nothing to compare the runs with)"
            )),
        );
    };
    if !entry.devices.iter().any(|d| d == base) {
        return (
            Stage::Pass(String::new()),
            Stage::Pass(format!(
                "each of {n} runs passed the log check; not compared: `{base}` is not in its devices ({})",
                entry.devices.join(", ")
            )),
        );
    }
    let mut base_logs = Vec::new();
    for k in 1..=n {
        match one_run(entry, opts, &dir, base, k) {
            Ok(log) => base_logs.push(log),
            Err((run, log)) => {
                let what = format!("baseline run {k} of {n} on {base}");
                return (prefix(run, &what), prefix(log, &what));
            }
        }
    }
    let options = validator::compare::Options {
        metric: METRIC.into(),
        metric_fallback: false,
        ..validator::compare::Options::default()
    };
    let log = match compare_runs(&base_logs, &device_logs, &options, None) {
        Ok(r) => {
            let words = format!(
                "each of {n} runs passed the log check; `{METRIC}` across {n} runs on {} against {n} on {base}: {}",
                opts.device,
                verdict_line(&r)
            );
            if r.pass {
                Stage::Pass(words)
            } else {
                Stage::Fail(words)
            }
        }
        Err(e) => Stage::Fail(format!(
            "`{METRIC}` cannot be compared across the runs on {} and {base}: {e}",
            opts.device
        )),
    };
    (Stage::Pass(String::new()), log)
}

/// Stage text prefixed with which run it is about.
fn prefix(stage: Stage, what: &str) -> Stage {
    match stage {
        Stage::Fail(d) => Stage::Fail(format!("{what}: {d}")),
        Stage::Skip(d) => Stage::Skip(format!("{what}: {d}")),
        other => other,
    }
}

/// Run `k` on `device` in its own fresh output directory, then its log check. Ok: its log;
/// Err: the (run, log) stages that failed.
fn one_run(
    entry: &ModelEntry,
    opts: &Options,
    dir: &Path,
    device: &str,
    k: usize,
) -> Result<PathBuf, (Stage, Stage)> {
    let out = run_dir(opts, &entry.name, device, k);
    if let Err(why) = workdir::fresh(&out) {
        return Err((Stage::Fail(why), Stage::Skip("not run".into())));
    }
    let console = out.join("console.log");
    let command = entry.command_for(device, &out);
    let deadline = Instant::now().checked_add(Duration::from_secs(entry.timeout));
    let mut cmd = process::shell(&command, dir, &[]);
    cmd.envs(env::command_env(
        device,
        &opts.path_prefix,
        opts.kit.as_ref(),
        &opts.sdaa,
    ));
    let outcome = run_job(cmd, &console, deadline, opts);
    let run = run_stage(&outcome, entry.timeout, &console, "sh -c");
    if run.failed() {
        let log = if outcome == RunOutcome::Interrupted {
            Stage::Skip("not checked: interrupted".into())
        } else {
            Stage::Skip("not checked".into())
        };
        return Err((run, log));
    }
    let path = entry.log_path(dir, &out);
    let metrics = entry.metrics.clone();
    let log = log_stage(deadline, entry.timeout, &path, move |p| {
        logcheck::check_log(p, &metrics)
    });
    if log.failed() {
        return Err((Stage::Pass(String::new()), log));
    }
    Ok(path)
}
