//! `modelzoo port --runs N`: the original and the port each run N times (each run in a fresh
//! copy of its own, the same command: nothing but being run again tells the runs apart), and
//! the port is judged across the runs as well as run against run. The final loss of each run
//! goes into `validator::compare::compare_runs` — Welch's one-sided t-test of "the port is worse
//! by at most the 1% margin" at α = 0.05 with three runs a side or more, each side's mean,
//! spread and olympic mean — beside the per-pair verdict port gives with one run.
//!
//! Which verdict decides:
//! - an original that is reproducible (the step rule applies): the step rule, as with one run;
//!   the runs' table shows whether they agreed (a script that seeds itself computes the same
//!   losses every time: spread 0, and the report says that no noise was measured);
//! - an original judged by the 1% rule (AMP, a CUDA baseline): the test across the runs;
//! - an original that is not reproducible (its two first runs differ from the first step —
//!   unjudgeable with one run): the test across the runs, by the 1% rule.

use super::judge::{judge_candidate_ran, run_and_judge_candidate, run_candidate};
use super::runs::{backward_log, read_inventory, run_side, OpPrecision};
use super::*;
use validator::compare::{compare_runs, verdict_line, RunsComparison};

/// Fewest runs a side `--runs` takes (1 is port's own default: one run a side).
pub const MIN_RUNS_FLAG: usize = 2;
/// Most runs a side `--runs` takes: each is a whole training run.
pub const MAX_RUNS: usize = 100;

/// What judging across `--runs N` found; `port.json`'s `across_runs`.
#[derive(Debug, Clone, Serialize)]
pub struct AcrossRuns {
    /// The runs asked for on each side.
    pub requested: usize,
    /// What set the verdict: `step-by-step` (a reproducible original), else the multi-run
    /// comparison's own (`welch` with 3 runs a side or more, `per-pair` below).
    pub decided_by: String,
    /// How the runs differ, and whether their spread measured any noise.
    pub note: String,
    /// The original's runs after the ones in `baseline` / `baseline_second`, in order.
    pub baseline_more: Vec<Run>,
    /// The port's runs after `candidate`, in order.
    pub candidate_more: Vec<Run>,
    /// One comparison a loss metric: every run's final value, each side's spread, the test.
    pub comparisons: Vec<RunsComparison>,
}

/// The port's runs and verdict with `--runs n` (n ≥ 2). `saved`: the original was judged
/// usable (step rule or 1% rule); None: it ran twice and is not reproducible, which only the
/// test across runs can judge. `port.baseline` (and `baseline_second`) already ran.
pub(crate) fn judge_across_runs(
    port: &mut Port,
    ctx: &Ctx,
    n: usize,
    saved: Option<&Saved>,
    scan: &migrate::Report,
    cancel: &AtomicBool,
) -> Result<Verdict, PortError> {
    let backward = port.loss_note.is_some();
    let metrics: Vec<String> = match saved {
        Some(s) => s.series.iter().map(|s| s.metric.clone()).collect(),
        None => port.baseline.loss_metrics.clone(),
    };
    let not_reproducible = port.summary.replace("; the port was not run", "");
    // The first pair, as port judges it with one run.
    let first = match saved {
        Some(saved) => run_and_judge_candidate(port, ctx, saved, Some(scan), cancel)?,
        None => {
            run_candidate(port, ctx, cancel)?;
            if let Some(v) = judge_candidate_ran(port, Some(scan)) {
                return Ok(v);
            }
            Verdict::Pass
        }
    };
    if !matches!(first, Verdict::Pass | Verdict::Drift) {
        // Crashed, nothing on sdaa, no comparable loss, interrupted: more runs change nothing.
        port.summary = format!(
            "{} (the first of the {n} runs a side asked for; the others were not run)",
            port.summary
        );
        return Ok(first);
    }
    let mut more = AcrossRuns {
        requested: n,
        decided_by: String::new(),
        note: String::new(),
        baseline_more: Vec::new(),
        candidate_more: Vec::new(),
        comparisons: Vec::new(),
    };
    // The original's remaining runs.
    let ran = 1 + usize::from(port.baseline_second.is_some());
    for k in ran + 1..=n {
        let label = format!("baseline-{k}");
        let mut run = run_side(ctx, Side::Baseline, &label, OpPrecision::AsCalled, cancel)?;
        if let Err((verdict, why)) = usable(&mut run, &ctx.work, &label, backward, &metrics) {
            port.summary =
                format!("the original's run {k} of {n} {why}; the port was not judged across runs");
            more.baseline_more.push(run);
            port.across_runs = Some(more);
            return Ok(if verdict == Verdict::Interrupted {
                verdict
            } else {
                Verdict::BaselineFailed
            });
        }
        more.baseline_more.push(run);
    }
    // The port's remaining runs: each must run to the end on sdaa, as the first did.
    let (first_run, first_inventory) = (port.candidate.clone(), port.inventory.clone());
    for k in 2..=n {
        let label = format!("candidate-{k}");
        let started = SystemTime::now() - Duration::from_secs(2);
        let run = run_side(ctx, Side::Candidate, &label, OpPrecision::AsCalled, cancel)?;
        port.inventory = read_inventory(&ctx.work.join("inventory"), started);
        port.candidate = Some(run);
        let failed = judge_candidate_ran(port, Some(scan));
        let mut run = port.candidate.take().expect("it ran");
        port.candidate = first_run.clone();
        port.inventory = first_inventory.clone();
        if let Some(verdict) = failed {
            port.summary = format!("run {k} of {n}: {}", port.summary);
            more.candidate_more.push(run);
            port.across_runs = Some(more);
            return Ok(verdict);
        }
        if let Err((verdict, why)) = usable(&mut run, &ctx.work, &label, backward, &metrics) {
            port.summary = format!("the port's run {k} of {n} on sdaa {why}");
            more.candidate_more.push(run);
            port.across_runs = Some(more);
            return Ok(if verdict == Verdict::Interrupted {
                verdict
            } else {
                Verdict::NoCandidateLoss
            });
        }
        more.candidate_more.push(run);
    }
    // The first candidate's losses (read by the judge when it was judged; here when not).
    if saved.is_none() {
        let c = port.candidate.as_mut().expect("it ran");
        if let Err((_, why)) = usable(c, &ctx.work, "candidate", backward, &metrics) {
            port.summary = format!("the port's run 1 of {n} on sdaa {why}");
            port.across_runs = Some(more);
            return Ok(Verdict::NoCandidateLoss);
        }
    }
    let logs = |first: Option<&Run>, second: Option<&Run>, rest: &[Run]| -> Vec<PathBuf> {
        first
            .into_iter()
            .chain(second)
            .chain(rest)
            .filter_map(|r| r.loss_log.clone())
            .collect()
    };
    let b_logs = logs(
        Some(&port.baseline),
        port.baseline_second.as_ref(),
        &more.baseline_more,
    );
    let c_logs = logs(port.candidate.as_ref(), None, &more.candidate_more);
    for metric in &metrics {
        let options = compare::Options {
            metric: metric.clone(),
            metric_fallback: false,
            ..compare::Options::default()
        };
        match compare_runs(&b_logs, &c_logs, &options, None) {
            Ok(r) => more.comparisons.push(r),
            Err(e) => {
                port.summary = format!(
                    "the port ran to the end on sdaa in each of its {n} runs, but `{metric}` cannot be compared across the runs: {e}"
                );
                port.across_runs = Some(more);
                return Ok(Verdict::StepsDiffer);
            }
        }
    }
    more.note = runs_note(n, &more.comparisons);
    let step_rule = saved.is_some_and(|s| s.rule.name == "step-by-step");
    let failing = more.comparisons.iter().find(|r| !r.pass);
    let lines = more
        .comparisons
        .iter()
        .map(|r| format!("`{}`: {}", r.metric, verdict_line(r)))
        .collect::<Vec<_>>()
        .join("; ");
    let verdict = if step_rule {
        more.decided_by = "step-by-step".into();
        port.summary = format!(
            "{}. Across {n} runs a side ({}; the step rule decides for a reproducible original): {lines}",
            port.summary, more.note
        );
        first
    } else {
        more.decided_by = more
            .comparisons
            .first()
            .map_or("per-pair", |r| r.decided_by)
            .to_string();
        if saved.is_none() {
            port.rule = Some(RuleUsed {
                name: "across-runs".into(),
                why: format!(
                    "{not_reproducible}; so the port is judged across {n} runs a side instead: Welch's one-sided t-test on each run's final loss (mean of its last 10 values), H0: the port is worse by at most 1% of the original's mean, rejected at α = 0.05 (docs/compare.md)"
                ),
            });
        }
        let device = port
            .candidate
            .as_ref()
            .map_or("sdaa".to_string(), |c| c.device.clone());
        let pair = if saved.is_some() {
            format!(
                " One pair alone ({}): {}.",
                if first == Verdict::Pass {
                    "PASS"
                } else {
                    "FAIL"
                },
                first_pair_words(port)
            )
        } else {
            String::new()
        };
        match failing {
            Some(r) => {
                port.summary = format!(
                    "the port ran to the end on {device} in each of its {n} runs, but its `{}` is worse than the original's across the runs: {}.{pair} — next: `modelzoo diff` of one step's dumps names the op (docs/diff.md)",
                    r.metric,
                    verdict_line(r)
                );
                Verdict::Drift
            }
            None => {
                port.summary = format!(
                    "the port ran to the end on {device} in each of its {n} runs and matches the original across the runs: {lines}.{pair}"
                );
                Verdict::Pass
            }
        }
    };
    port.across_runs = Some(more);
    Ok(verdict)
}

/// How the runs differ, in words: never by more than being run again, so a spread of 0 on
/// both sides is said as what it is — no noise was measured — rather than as a measured one.
fn runs_note(n: usize, comparisons: &[RunsComparison]) -> String {
    let spread0 = comparisons.iter().all(|r| {
        r.baseline.spread.max == r.baseline.spread.min
            && r.candidate.spread.max == r.candidate.spread.min
    });
    if spread0 {
        format!(
            "the {n} runs of each side are the same command in fresh copies; they computed the same final loss (spread 0): the command seeds itself, so repeating it measured no run-to-run noise"
        )
    } else {
        format!(
            "the {n} runs of each side are the same command in fresh copies; their final losses spread (see the table): that spread is the run-to-run noise the test weighs"
        )
    }
}

/// The 1% rule's words on the first pair, from the judge's comparison.
fn first_pair_words(port: &Port) -> String {
    port.compare
        .as_ref()
        .map_or("not compared".to_string(), |c| c.verdict.reason.clone())
}

/// Whether a run of the original or the port (`label`) ended well and logged every metric
/// judged; with `backward`, its losses are the shim's backward() records. Err: the verdict
/// kind (Interrupted, or any other for "unusable") and why, in words that follow "run k of n".
fn usable(
    run: &mut Run,
    work: &Path,
    label: &str,
    backward: bool,
    metrics: &[String],
) -> Result<(), (Verdict, String)> {
    if run.outcome == "interrupted" {
        return Err((Verdict::Interrupted, "was interrupted".into()));
    }
    if !run.ran_to_the_end() {
        let at = run.crash.as_ref().map_or(String::new(), |c| {
            format!(
                " at {}:{}: {}",
                c.file.display(),
                c.crash.frame.line,
                c.crash.error
            )
        });
        return Err((
            Verdict::Crash,
            format!("did not run to the end ({}){at}", run.outcome),
        ));
    }
    if backward {
        match backward_log(work, label) {
            Some((path, values)) if values > 0 => {
                run.loss_log = Some(path);
                run.loss_metrics = vec![BACKWARD_METRIC.to_string()];
                run.steps = values;
                run.loss_error = None;
            }
            _ => {
                return Err((
                    Verdict::NoCandidateLoss,
                    format!("ran, but the shim recorded no backward() loss (`{BACKWARD_METRIC}`)"),
                ))
            }
        }
    }
    if run.loss_log.is_none() {
        return Err((
            Verdict::NoCandidateLoss,
            format!(
                "ran, but {}",
                run.loss_error.as_deref().unwrap_or("logged no loss")
            ),
        ));
    }
    if let Some(missing) = metrics.iter().find(|m| !run.loss_metrics.contains(m)) {
        return Err((
            Verdict::NoCandidateLoss,
            format!("ran, but logged no `{missing}` (the first run of the original did)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs that computed the same losses are said to have measured no noise; runs that differ,
    /// that their spread is the noise weighed.
    #[test]
    fn identical_runs_say_no_noise_was_measured() {
        let tmp = tempfile::tempdir().unwrap();
        let log = |name: &str, last: &str| {
            let p = tmp.path().join(name);
            std::fs::write(&p, format!("step 0 loss 2.0\nstep 1 loss {last}\n")).unwrap();
            p
        };
        let options = compare::Options {
            metric: "loss".into(),
            metric_fallback: false,
            ..compare::Options::default()
        };
        let same = [log("b1", "1.5"), log("b2", "1.5")];
        let cand = [log("c1", "1.5"), log("c2", "1.5")];
        let r = compare_runs(&same, &cand, &options, None).unwrap();
        let note = runs_note(2, &[r]);
        assert!(
            note.contains("spread 0") && note.contains("measured no run-to-run noise"),
            "{note}"
        );
        let other = [log("c3", "1.5"), log("c4", "1.52")];
        let r = compare_runs(&same, &other, &options, None).unwrap();
        let note = runs_note(2, &[r]);
        assert!(
            note.contains("the run-to-run noise the test weighs") && !note.contains("spread 0"),
            "{note}"
        );
    }
}
