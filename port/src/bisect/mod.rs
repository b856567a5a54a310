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
//!
//! The module is split by concern: [`search`] (the group testing, pure logic), `trial` (one run
//! with a fallback set, watched and judged), `types` (what they share), and here the glue: the
//! baseline read, the candidates from the op inventory, [`run`] and [`after_port`].

mod search;
mod trial;
mod types;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use modelzoo_support::kit::Kit;
use validator::compare;

pub use search::{find_culprits, Found, Probe};
pub use types::{
    env_line, BisectError, Options, Outcome, Report, Rule, Trial, FALLBACK_ENV, JSON_FILE,
};

use crate::{losses, steps, Port, PortError, Verdict, WORK_DIR};
use trial::Runner;
use types::Baseline;

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
}
