//! Acceptance across runs: several baseline and candidate runs, judged on their final values
//! with Welch's one-sided t-test, so that a verdict is not the noise of one pair.
//!
//! Each run's final value is the mean of its own last `tail` values of the metric. With at
//! least [`MIN_RUNS`] runs a side the test decides: H0 is "the candidate is worse than the
//! baseline by at most the rule's margin" — (candidate − baseline) ≤ margin × |baseline mean|
//! for a metric where lower is better, (baseline − candidate) ≤ … where higher is better — and
//! the comparison fails only when H0 is rejected at [`ALPHA`]: the candidate is worse by more
//! than the rule beyond the runs' noise. The classic per-pair rule is reported beside it.
//! With fewer runs the noise cannot be measured: the per-pair rule decides and the output says
//! how many runs would settle it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::runs_report::{fmt_num, fmt_t};
use super::stats::{spread, student_t_sf, welch_df, Spread};
use super::{
    compare_files, pct, read_series, same_file, CompareError, Comparison, Options, Rule,
    MODELZOO_LOSS_MEAN_REL,
};

/// The significance level of the one-sided test (MLPerf's convergence checks use 0.05).
pub const ALPHA: f64 = 0.05;

/// Runs a side from which the t-test decides; below, the per-pair rule does.
pub const MIN_RUNS: usize = 3;

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Goal {
    /// Lower is better (losses, error rates, perplexity).
    Minimize,
    /// Higher is better (accuracy, mAP, F1, BLEU).
    Maximize,
}

impl Goal {
    /// tcap_dllogger's `GOAL` spelling (`MINIMIZE` / `MAXIMIZE`, any case), or `min` / `max`.
    pub fn parse(s: &str) -> Option<Goal> {
        match s.trim().to_ascii_lowercase().as_str() {
            "minimize" | "min" | "lower" => Some(Goal::Minimize),
            "maximize" | "max" | "higher" => Some(Goal::Maximize),
            _ => None,
        }
    }

    /// The direction a metric's name implies, when it names a known kind of metric: losses,
    /// errors and perplexity are minimised; accuracies, mAP, F1, BLEU, IoU, throughput are
    /// maximised.
    pub fn of_name(metric: &str) -> Option<Goal> {
        // The detection rule's mAP metrics (`val.mAP`, `val.segm_mAP`) are higher-is-better.
        if super::is_map_metric(metric) {
            return Some(Goal::Maximize);
        }
        let lower = metric.to_ascii_lowercase();
        let parts: Vec<&str> = lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|p| !p.is_empty())
            .collect();
        let has = |words: &[&str]| parts.iter().any(|p| words.contains(p));
        let starts = |prefixes: &[&str]| {
            parts
                .iter()
                .any(|p| prefixes.iter().any(|x| p.starts_with(x)))
        };
        if has(&[
            "loss",
            "err",
            "error",
            "ppl",
            "perplexity",
            "wer",
            "cer",
            "mse",
            "mae",
            "rmse",
        ]) || starts(&["loss", "error"])
        {
            Some(Goal::Minimize)
        } else if has(&[
            "map",
            "ap",
            "ap50",
            "ap75",
            "f1",
            "bleu",
            "rouge",
            "iou",
            "miou",
            "dice",
            "auc",
            "ips",
            "mfu",
            "em",
            "exact",
            "precision",
            "recall",
            "psnr",
            "ssim",
        ]) || starts(&["acc", "top"])
        {
            Some(Goal::Maximize)
        } else {
            None
        }
    }

    /// The direction in words.
    pub fn words(&self) -> &'static str {
        match self {
            Goal::Minimize => "lower is better",
            Goal::Maximize => "higher is better",
        }
    }
}

/// The goal a log's METADATA record declares for `metric` (tcap_dllogger's `GOAL`), read from
/// the head of the log: METADATA comes before the values, so the read stops at the first
/// records.
pub fn declared_goal(path: &Path, metric: &str) -> Option<Goal> {
    let mut reader = dllogger::open(path).ok()?;
    for _ in 0..64 {
        if let Some(goal) = reader
            .metadata()
            .get(metric)
            .and_then(|m| m.goal.as_deref())
            .and_then(Goal::parse)
        {
            return Some(goal);
        }
        match reader.try_next() {
            Ok(Some(_)) => {}
            _ => break,
        }
    }
    reader
        .metadata()
        .get(metric)
        .and_then(|m| m.goal.as_deref())
        .and_then(Goal::parse)
}

/// One run's final value.
#[derive(Debug, Clone, Serialize)]
pub struct RunFinal {
    pub path: PathBuf,
    /// Values of the metric in the run.
    pub values: usize,
    /// Values averaged for the final value (the last `tail`, or all when fewer).
    pub tail: usize,
    /// Mean of the last `tail` values; NaN (null) when one of the run's values is not finite.
    pub final_value: f64,
    /// Whether every value of the run is finite (a NaN or inf is a diverged run).
    pub finite: bool,
}

/// One side's runs and their spread.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub runs: Vec<RunFinal>,
    /// Over the final values.
    pub spread: Spread,
}

/// Welch's one-sided t-test of H0: worse-by ≤ margin.
#[derive(Debug, Clone, Serialize)]
pub struct WelchTest {
    /// How much worse the candidate's mean is than the baseline's, in the metric's units:
    /// candidate − baseline when lower is better, baseline − candidate when higher is better.
    pub worse_by: f64,
    /// `worse_by` / |baseline mean| (null when the baseline mean is 0).
    pub worse_by_rel: Option<f64>,
    /// The rule's margin: margin_rel × |baseline mean|.
    pub margin: f64,
    pub margin_rel: f64,
    /// Standard error of the difference: √(s_b²/n_b + s_c²/n_c).
    pub se: f64,
    /// (worse_by − margin) / se; ±inf when se is 0.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (null when both sides have no spread).
    pub df: Option<f64>,
    /// P(T > t) under H0.
    pub p: f64,
    pub alpha: f64,
    /// H0 rejected: the candidate is worse than the rule allows beyond the noise.
    pub reject: bool,
    /// When the candidate's mean is worse than the margin but H0 stands: about how many runs a
    /// side (with these spreads) would make the difference significant, up to 1,000.
    pub runs_to_show: Option<usize>,
}

/// The classic per-pair rule on one (baseline, candidate) pair.
#[derive(Debug, Clone, Serialize)]
pub struct PairVerdict {
    pub baseline: PathBuf,
    pub candidate: PathBuf,
    pub pass: bool,
    /// (candidate final − baseline final) / |baseline final| over the pair's steps.
    pub final_rel_err: f64,
    pub reason: String,
}

/// Everything a multi-run comparison found.
#[derive(Debug, Clone, Serialize)]
pub struct RunsComparison {
    pub metric: String,
    pub rank: u32,
    pub goal: Goal,
    /// Where the goal comes from (the flag, the log's METADATA, the metric's name, assumed).
    pub goal_note: String,
    pub rule: Rule,
    /// The rule's relative margin the test uses (rel1's threshold; 5% for modelzoo-loss).
    pub margin_rel: f64,
    pub tail: usize,
    pub baseline: Side,
    pub candidate: Side,
    /// Welch's test (null with fewer than [`MIN_RUNS`] runs on a side).
    pub test: Option<WelchTest>,
    /// Per-pair verdicts: pair i is baseline i mod n_b with candidate i mod n_c.
    pub pairs: Vec<PairVerdict>,
    /// Whether every pair passes the per-pair rule.
    pub pairs_pass: bool,
    /// What decided: `welch` (≥ 3 runs a side) or `per-pair`.
    pub decided_by: &'static str,
    pub pass: bool,
    pub reason: String,
    pub warnings: Vec<String>,
    /// Each pair's full comparison (for its report).
    #[serde(skip)]
    pub comparisons: Vec<Comparison>,
}

/// Compare `baselines` with `candidates` (each at least one log; `options.noise` unused).
/// `goal` overrides the metric's direction; else the baseline log's METADATA, else its name,
/// else lower is better (said in `goal_note`).
pub fn compare_runs(
    baselines: &[PathBuf],
    candidates: &[PathBuf],
    options: &Options,
    goal: Option<Goal>,
) -> Result<RunsComparison, CompareError> {
    if baselines.is_empty() || candidates.is_empty() {
        return Err(CompareError::Read {
            role: if baselines.is_empty() {
                "baseline"
            } else {
                "candidate"
            },
            path: PathBuf::new(),
            message: "no log given — give at least one path (or a glob that matches one)".into(),
        });
    }
    for (role, side) in [("baseline", baselines), ("candidate", candidates)] {
        for (i, a) in side.iter().enumerate() {
            if let Some(b) = side[..i].iter().find(|b| same_file(a, b)) {
                return Err(CompareError::Read {
                    role,
                    path: a.clone(),
                    message: format!(
                        "given twice among the {role} runs (also as {}): a run counted twice understates the runs' noise — give each run's log once",
                        b.display()
                    ),
                });
            }
        }
    }
    let mut warnings = Vec::new();
    let options = Options {
        noise: None,
        noise_gate: false,
        ..options.clone()
    };
    let npairs = baselines.len().max(candidates.len());
    let mut comparisons = Vec::with_capacity(npairs);
    for i in 0..npairs {
        let (b, c) = (
            &baselines[i % baselines.len()],
            &candidates[i % candidates.len()],
        );
        comparisons.push(compare_files(b, c, &options)?);
    }
    let metric = comparisons[0].metric.clone();
    if let Some(other) = comparisons.iter().find(|c| c.metric != metric) {
        warnings.push(format!(
            "the pairs' metrics differ (`{metric}` in the first pair, `{}` in {} vs {}): every run is read for `{metric}`",
            other.metric,
            other.baseline.path.display(),
            other.candidate.path.display()
        ));
    }
    let pairs: Vec<PairVerdict> = comparisons
        .iter()
        .map(|c| PairVerdict {
            baseline: c.baseline.path.clone(),
            candidate: c.candidate.path.clone(),
            pass: c.verdict.pass,
            final_rel_err: c.figures.final_rel_err,
            reason: c.verdict.reason.clone(),
        })
        .collect();
    let pairs_pass = pairs.iter().all(|p| p.pass);
    let tail = options.tail.max(1);
    let read_side =
        |role: &'static str, paths: &[PathBuf]| -> Result<Vec<RunFinal>, CompareError> {
            paths
                .iter()
                .map(|p| {
                    let s = read_series(p, role, &metric, options.rank)?;
                    let values = s.steps.values();
                    let k = tail.min(values.len());
                    let finite = values.iter().all(|v| v.is_finite());
                    let last = &values[values.len() - k..];
                    Ok(RunFinal {
                        path: p.clone(),
                        values: values.len(),
                        tail: k,
                        final_value: if finite {
                            last.iter().sum::<f64>() / k as f64
                        } else {
                            f64::NAN
                        },
                        finite,
                    })
                })
                .collect()
        };
    let b_runs = read_side("baseline", baselines)?;
    let c_runs = read_side("candidate", candidates)?;
    let (goal, goal_note) = match goal {
        Some(g) => (g, "given with --goal".to_string()),
        None => match declared_goal(&baselines[0], &metric) {
            Some(g) => (
                g,
                format!(
                    "the baseline log's METADATA declares `{metric}` {}",
                    match g {
                        Goal::Minimize => "MINIMIZE",
                        Goal::Maximize => "MAXIMIZE",
                    }
                ),
            ),
            None => match Goal::of_name(&metric) {
                Some(g) => (g, format!("from the metric's name `{metric}`")),
                None => {
                    warnings.push(format!(
                        "no direction is known for `{metric}` (no METADATA GOAL in the baseline log, a name that is neither a loss nor an accuracy): taken as lower is better — give --goal maximize if higher is better"
                    ));
                    (Goal::Minimize, "assumed (unknown metric)".to_string())
                }
            },
        },
    };
    let margin_rel = match options.rule {
        Rule::Rel1 { threshold } => threshold,
        Rule::ModelzooLoss => MODELZOO_LOSS_MEAN_REL,
    };
    let finals = |runs: &[RunFinal]| runs.iter().map(|r| r.final_value).collect::<Vec<_>>();
    let baseline = Side {
        spread: spread(&finals(&b_runs)),
        runs: b_runs,
    };
    let candidate = Side {
        spread: spread(&finals(&c_runs)),
        runs: c_runs,
    };
    let all_finite = baseline
        .runs
        .iter()
        .chain(&candidate.runs)
        .all(|r| r.finite);
    let test = (baseline.runs.len() >= MIN_RUNS && candidate.runs.len() >= MIN_RUNS && all_finite)
        .then(|| welch(&baseline.spread, &candidate.spread, goal, margin_rel));

    let mut pass;
    let mut reason;
    let decided_by;
    if let Some(t) = &test {
        decided_by = "welch";
        pass = !t.reject;
        reason = welch_reason(t, &candidate.spread, &baseline.spread, goal);
    } else {
        decided_by = "per-pair";
        let failing = pairs.iter().filter(|p| !p.pass).count();
        pass = failing == 0;
        let more = |n: usize| MIN_RUNS.saturating_sub(n);
        let (mb, mc) = (more(baseline.runs.len()), more(candidate.runs.len()));
        let noise = if baseline.runs.len() == 1 && candidate.runs.len() == 1 {
            "one run a side: the run-to-run noise is unknown, so this verdict may be noise"
                .to_string()
        } else {
            format!(
                "{} baseline and {} candidate run(s): too few to measure the run-to-run noise",
                baseline.runs.len(),
                candidate.runs.len()
            )
        };
        reason = format!(
            "{} of {} pair(s) pass the per-pair rule ({noise} — {MIN_RUNS} runs a side settle it with Welch's t-test: {} more baseline and {} more candidate run(s))",
            pairs.len() - failing,
            pairs.len(),
            mb,
            mc
        );
    }
    if !all_finite {
        let bad = baseline
            .runs
            .iter()
            .map(|r| ("baseline", r))
            .chain(candidate.runs.iter().map(|r| ("candidate", r)))
            .filter(|(_, r)| !r.finite)
            .map(|(role, r)| format!("{role} {}", r.path.display()))
            .collect::<Vec<_>>();
        pass = false;
        reason = format!(
            "{} run(s) hold NaN or infinite values ({}): a run that diverged fails, whatever the others say",
            bad.len(),
            bad.join(", ")
        );
    }
    // A run that stopped early is not a sample of the same schedule.
    let longest = baseline
        .runs
        .iter()
        .chain(&candidate.runs)
        .map(|r| r.values)
        .max()
        .unwrap_or(0);
    let short: Vec<String> = baseline
        .runs
        .iter()
        .map(|r| ("baseline", r))
        .chain(candidate.runs.iter().map(|r| ("candidate", r)))
        .filter(|(_, r)| (r.values as f64) < options.min_coverage * longest as f64 * (1.0 - 1e-12))
        .map(|(role, r)| format!("{role} {} ({} values)", r.path.display(), r.values))
        .collect();
    if !short.is_empty() {
        let what = format!(
            "{} run(s) have fewer values than {} of the longest run's {longest}: {}",
            short.len(),
            super::coverage_pct(options.min_coverage),
            short.join(", ")
        );
        if options.allow_partial {
            warnings.push(format!(
                "{what}; --allow-partial: judged on their final values anyway"
            ));
        } else if pass {
            pass = false;
            reason = format!(
                "{what} — runs that stopped early do not pass: complete them, or give --allow-partial (the test alone: PASS: {reason})"
            );
        } else {
            warnings.push(format!("{what}: runs that stopped early do not pass"));
        }
    }
    Ok(RunsComparison {
        metric,
        rank: options.rank,
        goal,
        goal_note,
        rule: options.rule,
        margin_rel,
        tail,
        baseline,
        candidate,
        test,
        pairs,
        pairs_pass,
        decided_by,
        pass,
        reason,
        warnings,
        comparisons,
    })
}

/// Welch's one-sided test of H0: worse_by ≤ margin_rel × |baseline mean|.
pub fn welch(b: &Spread, c: &Spread, goal: Goal, margin_rel: f64) -> WelchTest {
    let worse_by = match goal {
        Goal::Minimize => c.mean - b.mean,
        Goal::Maximize => b.mean - c.mean,
    };
    let margin = margin_rel * b.mean.abs();
    let (vb, vc) = (
        b.std.unwrap_or(0.0).powi(2) / b.n as f64,
        c.std.unwrap_or(0.0).powi(2) / c.n as f64,
    );
    let se = (vb + vc).sqrt();
    let excess = worse_by - margin;
    let df = welch_df(vb, b.n, vc, c.n);
    let (t, p) = if se > 0.0 {
        let t = excess / se;
        (t, student_t_sf(t, df))
    } else if excess > 0.0 {
        (f64::INFINITY, 0.0)
    } else {
        (if excess < 0.0 { f64::NEG_INFINITY } else { 0.0 }, 1.0)
    };
    let reject = p < ALPHA;
    // With these per-run variances, the smallest n a side at which this excess is significant.
    let runs_to_show = (!reject && excess > 0.0 && se > 0.0)
        .then(|| {
            let (sb2, sc2) = (b.std.unwrap_or(0.0).powi(2), c.std.unwrap_or(0.0).powi(2));
            (b.n.max(c.n).max(2)..=1000).find(|&n| {
                let se_n = ((sb2 + sc2) / n as f64).sqrt();
                let df_n = (n as f64 - 1.0) * (sb2 + sc2).powi(2) / (sb2 * sb2 + sc2 * sc2);
                student_t_sf(excess / se_n, df_n) < ALPHA
            })
        })
        .flatten();
    WelchTest {
        worse_by,
        worse_by_rel: (b.mean != 0.0).then(|| worse_by / b.mean.abs()),
        margin,
        margin_rel,
        se,
        t,
        df: df.is_finite().then_some(df),
        p,
        alpha: ALPHA,
        reject,
        runs_to_show,
    }
}

fn welch_reason(t: &WelchTest, c: &Spread, b: &Spread, goal: Goal) -> String {
    let worse = match t.worse_by_rel {
        Some(r) => format!("{} ({})", fmt_num(t.worse_by), pct(r)),
        None => fmt_num(t.worse_by),
    };
    let stat = format!(
        "t = {}, df = {}, p = {:.4}",
        fmt_t(t.t),
        t.df.map(|d| format!("{d:.2}"))
            .unwrap_or_else(|| "undefined".into()),
        t.p
    );
    let means = format!(
        "candidate mean {} vs baseline mean {}, {}",
        fmt_num(c.mean),
        fmt_num(b.mean),
        goal.words()
    );
    if t.reject {
        format!(
            "the candidate is worse by {worse}, more than the margin {} ({}) beyond the runs' noise: H0 rejected, {stat} < α = {} ({means})",
            fmt_num(t.margin),
            pct(t.margin_rel),
            t.alpha
        )
    } else if t.worse_by > t.margin {
        format!(
            "the candidate is worse by {worse}, more than the margin {} ({}), but within the runs' noise: H0 not rejected, {stat} ≥ α = {} ({means}){}",
            fmt_num(t.margin),
            pct(t.margin_rel),
            t.alpha,
            match t.runs_to_show {
                Some(n) => format!("; if the difference is real, about {n} runs a side would show it"),
                None => String::new(),
            }
        )
    } else {
        format!(
            "the candidate is worse by {worse}, within the margin {} ({}): H0 not rejected, {stat} ({means})",
            fmt_num(t.margin),
            pct(t.margin_rel)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(xs: &[f64]) -> Spread {
        spread(xs)
    }

    #[test]
    fn welch_passes_inside_noise_and_fails_far_outside() {
        // Baseline losses around 2.0 with a wide spread (±3%); the margin is 1% = 0.02.
        let b = side(&[1.94, 2.00, 2.06, 1.97, 2.03]);
        // 1.5% worse on average — beyond the 1% rule for any one pair, inside the noise.
        let c = side(&[1.97, 2.03, 2.09, 2.00, 2.06]);
        let t = welch(&b, &c, Goal::Minimize, 0.01);
        assert!((t.worse_by - 0.03).abs() < 1e-12, "{t:?}");
        assert!(!t.reject, "{t:?}");
        assert!(t.p > 0.3 && t.p < 0.5, "{t:?}");
        assert!(t.runs_to_show.is_some_and(|n| n > 5), "{t:?}");
        // 10% worse: far outside the noise.
        let far = side(&[2.14, 2.20, 2.26, 2.17, 2.23]);
        let t = welch(&b, &far, Goal::Minimize, 0.01);
        // t = 0.18 / 0.03 = 6 on 8 degrees of freedom: p ≈ 1.6e-4.
        assert!(t.reject && t.p < 1e-3, "{t:?}");
        // Equal families pass with p well above α.
        let t = welch(&b, &b, Goal::Minimize, 0.01);
        assert!(!t.reject && t.p > 0.5, "{t:?}");
        // Higher is better: a candidate whose accuracy is higher is not worse.
        let t = welch(&b, &far, Goal::Maximize, 0.01);
        assert!(!t.reject && t.worse_by < 0.0, "{t:?}");
        let t = welch(&far, &b, Goal::Maximize, 0.01);
        assert!(t.reject, "{t:?}");
    }

    #[test]
    fn welch_statistic_matches_a_hand_computation() {
        // b = [1, 2, 3] (mean 2, s² 1), c = [3, 4, 5, 6] (mean 4.5, s² 5/3), margin 0:
        // se² = 1/3 + 5/12 = 0.75, t = 2.5/√0.75 = 2.88675, df = 0.5625 / (1/18 + 25/432)
        // = 4.91566; its p lies between those of df 4 and df 5.
        let t = welch(
            &side(&[1.0, 2.0, 3.0]),
            &side(&[3.0, 4.0, 5.0, 6.0]),
            Goal::Minimize,
            0.0,
        );
        assert!((t.t - 2.5 / 0.75f64.sqrt()).abs() < 1e-12, "{t:?}");
        assert!((t.df.unwrap() - 0.5625 / (1.0 / 18.0 + 25.0 / 432.0)).abs() < 1e-9);
        assert!(
            t.p > student_t_sf(t.t, 5.0) && t.p < student_t_sf(t.t, 4.0),
            "{t:?}"
        );
        assert!(t.reject);
        // No spread on either side: the sign of the excess decides.
        let t = welch(&side(&[2.0; 3]), &side(&[2.1; 3]), Goal::Minimize, 0.01);
        assert!(t.reject && t.p == 0.0 && t.df.is_none(), "{t:?}");
        let t = welch(&side(&[2.0; 3]), &side(&[2.01; 3]), Goal::Minimize, 0.01);
        assert!(!t.reject && t.p == 1.0, "{t:?}");
    }

    #[test]
    fn goals_from_names_and_metadata_words() {
        assert_eq!(Goal::of_name("train.loss"), Some(Goal::Minimize));
        assert_eq!(Goal::of_name("val_loss"), Some(Goal::Minimize));
        assert_eq!(Goal::of_name("val.top1"), Some(Goal::Maximize));
        assert_eq!(Goal::of_name("acc1"), Some(Goal::Maximize));
        assert_eq!(Goal::of_name("val.mAP"), Some(Goal::Maximize));
        assert_eq!(Goal::of_name("val.segm_mAP"), Some(Goal::Maximize));
        assert_eq!(Goal::of_name("val.exact_match"), Some(Goal::Maximize));
        assert_eq!(Goal::of_name("lr"), None);
        assert_eq!(Goal::parse("MAXIMIZE"), Some(Goal::Maximize));
        assert_eq!(Goal::parse("sideways"), None);
    }
}
