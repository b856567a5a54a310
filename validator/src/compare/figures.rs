//! The figures over the paired steps and the rule's verdict on them.

use super::steps::Pairs;
use super::{
    Extreme, Figures, Rule, Verdict, MODELZOO_LOSS_MEAN_DIFF, MODELZOO_LOSS_MEAN_REL,
    ZERO_FINAL_ABS_TOL,
};

/// The shorter run must cover at least `min_coverage` of the longer: a run that stopped
/// early (or logs fewer steps) fails unless partial runs are allowed, and then it is warned
/// about. Above the minimum but short of all steps, a warning says what was not judged.
pub(super) fn gate_coverage(v: &mut Verdict, f: &Figures, allow_partial: bool) {
    let longest = f.baseline_steps.max(f.candidate_steps);
    if f.steps_compared >= longest {
        return;
    }
    let (longer, other) = if f.baseline_steps >= f.candidate_steps {
        ("baseline", "candidate")
    } else {
        ("candidate", "baseline")
    };
    let covered = format!(
        "{} step(s) compared of the {longer}'s {longest} ({}; the {other} has {})",
        f.steps_compared,
        coverage_pct(f.coverage),
        if longer == "baseline" {
            f.candidate_steps
        } else {
            f.baseline_steps
        }
    );
    let enough = f.coverage >= f.min_coverage * (1.0 - 1e-12);
    if enough {
        v.warnings.push(format!(
            "{covered}: at least the {} --min-coverage, so the verdict judges those steps; the {} step(s) only in one log are not judged",
            coverage_pct(f.min_coverage),
            longest - f.steps_compared
        ));
    } else if allow_partial {
        v.warnings.push(format!(
            "{covered}, below the {} --min-coverage; --allow-partial: the verdict judges those steps only",
            coverage_pct(f.min_coverage)
        ));
    } else {
        v.reason = format!(
            "{covered}, below the {} --min-coverage: a run that stopped early does not pass — complete it, or give --allow-partial to judge the steps compared (the rule on those steps: {}: {})",
            coverage_pct(f.min_coverage),
            if v.pass { "PASS" } else { "FAIL" },
            v.reason
        );
        v.pass = false;
    }
}

/// A coverage fraction in percent, rounded down so that anything short of all steps never
/// reads 100%.
pub fn coverage_pct(x: f64) -> String {
    format!("{:.2}%", (x * 10_000.0).floor() / 100.0)
}

/// Which share of the longer run is compared, and the least that passes.
#[derive(Debug, Clone, Copy)]
pub struct Coverage {
    /// Values of the metric in the baseline and in the candidate.
    pub baseline_steps: usize,
    pub candidate_steps: usize,
    /// Least steps compared / steps of the longer log that passes (0.95 = 95%).
    pub min_coverage: f64,
}

/// The figures over the paired steps (`pairs` not empty); sums are sequential, as Python's
/// `sum` does.
pub fn figures(pairs: &Pairs, coverage: Coverage, tail: usize) -> Figures {
    let n = pairs.len();
    let (b, c) = (pairs.baseline(), pairs.candidate());
    let (mut sum_rel, mut sum_abs_rel, mut sum_diff, mut sum_abs) = (0.0, 0.0, 0.0, 0.0);
    let mut rel_n = 0usize;
    let (mut max_abs, mut max_abs_at) = (f64::NEG_INFINITY, 0);
    let (mut max_rel, mut max_rel_at) = (f64::NEG_INFINITY, 0);
    let mut non_finite_steps = 0;
    for i in 0..n {
        let (x, y) = (b[i], c[i]);
        let d = y - x;
        non_finite_steps += usize::from(!(x.is_finite() && y.is_finite()));
        sum_diff += d;
        sum_abs += d.abs();
        if d.abs() > max_abs {
            (max_abs, max_abs_at) = (d.abs(), i);
        }
        if x != 0.0 {
            let r = d / x;
            sum_rel += r;
            sum_abs_rel += r.abs();
            rel_n += 1;
            if r.abs() > max_rel {
                (max_rel, max_rel_at) = (r.abs(), i);
            }
        }
    }
    if rel_n == 0 {
        max_rel = f64::NAN;
    }
    let tail = tail.min(n);
    let final_baseline = b[n - tail..].iter().sum::<f64>() / tail as f64;
    let final_candidate = c[n - tail..].iter().sum::<f64>() / tail as f64;
    let longest = coverage.baseline_steps.max(coverage.candidate_steps);
    Figures {
        steps_compared: n,
        mean_rel_err_signed: sum_rel / rel_n as f64,
        mean_rel_err_abs: sum_abs_rel / rel_n as f64,
        mean_diff_signed: sum_diff / n as f64,
        mean_abs_err: sum_abs / n as f64,
        max_abs_err: Extreme {
            value: max_abs,
            at: pairs.get(max_abs_at).key,
            index: max_abs_at,
        },
        max_rel_err: Extreme {
            value: max_rel,
            at: pairs.get(max_rel_at).key,
            index: max_rel_at,
        },
        zero_baseline_steps: n - rel_n,
        non_finite_steps,
        baseline_steps: coverage.baseline_steps,
        candidate_steps: coverage.candidate_steps,
        coverage: if longest == 0 {
            1.0
        } else {
            (n as f64 / longest as f64).min(1.0)
        },
        min_coverage: coverage.min_coverage,
        tail,
        final_baseline,
        final_candidate,
        final_rel_err: (final_candidate - final_baseline) / final_baseline.abs(),
        final_abs_err: final_candidate - final_baseline,
    }
}

/// Apply a rule to the figures.
pub fn verdict(rule: Rule, f: &Figures, mut warnings: Vec<String>) -> Verdict {
    let (pass, reason) = match rule {
        _ if f.non_finite_steps > 0 => (
            false,
            format!(
                "{} paired step(s) hold NaN or infinite values; the figures are not meaningful{}",
                f.non_finite_steps,
                if rule == Rule::ModelzooLoss {
                    " (the ModelZoo's loss.py cannot read nan or inf: its regex drops those steps and judges the rest, so it could pass this run)"
                } else {
                    ""
                }
            ),
        ),
        Rule::Rel1 { .. } if f.final_baseline == 0.0 => {
            let d = f.final_abs_err.abs();
            let pass = d <= ZERO_FINAL_ABS_TOL;
            (
                pass,
                format!(
                    "the baseline's final value is 0, so its relative error is undefined; absolute rule: |candidate final − baseline final| = {d:e} {} {ZERO_FINAL_ABS_TOL:e} (final value = mean of the last {} step(s): baseline {}, candidate {})",
                    if pass { "≤" } else { ">" },
                    f.tail,
                    f.final_baseline,
                    f.final_candidate
                ),
            )
        }
        Rule::Rel1 { threshold } => {
            let e = f.final_rel_err.abs();
            // An error that is the threshold in decimal (76 vs 75.24 at 1%) passes despite
            // binary rounding: allow one part in 1e9 of the threshold.
            let pass = e <= threshold * (1.0 + 1e-9);
            (
                pass,
                format!(
                    "|relative error of the final value| = {} {} {} (final value = mean of the last {} step(s): baseline {}, candidate {})",
                    pct(e),
                    if pass { "≤" } else { ">" },
                    pct(threshold),
                    f.tail,
                    f.final_baseline,
                    f.final_candidate
                ),
            )
        }
        Rule::ModelzooLoss => {
            let by_rel = f.mean_rel_err_signed <= MODELZOO_LOSS_MEAN_REL;
            let by_diff = f.mean_diff_signed <= MODELZOO_LOSS_MEAN_DIFF;
            warnings.push(
                "modelzoo-loss uses signed means: errors of opposite sign cancel, so a large error can pass; see mean |relative error| and the max figures"
                    .to_string(),
            );
            (
                by_rel || by_diff,
                format!(
                    "mean((c-b)/b) = {:.6e} {} {MODELZOO_LOSS_MEAN_REL}, mean(c-b) = {:.6e} {} {MODELZOO_LOSS_MEAN_DIFF} (passes when either holds; {} paired by position)",
                    f.mean_rel_err_signed,
                    if by_rel { "≤" } else { ">" },
                    f.mean_diff_signed,
                    if by_diff { "≤" } else { ">" },
                    counted(f.steps_compared as u64, "step")
                ),
            )
        }
    };
    Verdict {
        rule,
        pass,
        rule_pass: pass,
        reason,
        warnings,
    }
}

/// A fraction as a percentage with enough digits to see small errors.
/// `1 step`, `2 steps`: a count with its noun in the right number (`noun` takes an `s`).
pub fn counted(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

pub fn pct(x: f64) -> String {
    format!("{:.4}%", x * 100.0)
}
