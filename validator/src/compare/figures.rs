//! The figures over the paired steps and the rule's verdict on them.

use super::{
    Extreme, Figures, Pair, Rule, Verdict, MODELZOO_LOSS_MEAN_DIFF, MODELZOO_LOSS_MEAN_REL,
    ZERO_FINAL_ABS_TOL,
};

/// A candidate that covers fewer steps than the baseline has stopped early (or logs less
/// often): it fails unless partial runs are allowed, and then it is warned about.
pub(super) fn gate_coverage(v: &mut Verdict, f: &Figures, allow_partial: bool) {
    if f.steps_compared >= f.baseline_steps {
        return;
    }
    let covered = format!(
        "the candidate covers {} of the baseline's {} steps ({})",
        f.steps_compared,
        f.baseline_steps,
        coverage_pct(f.coverage)
    );
    if allow_partial {
        v.warnings.push(format!(
            "{covered}; --allow-partial: the verdict judges those steps only"
        ));
    } else {
        v.reason = format!(
            "{covered}: a run that stopped early does not pass — complete it, or give --allow-partial to judge the steps it has (the rule on those steps: {}: {})",
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

/// The figures over the paired steps (`baseline_steps`: values in the baseline); sums are
/// sequential, as Python's `sum` does.
pub fn figures(pairs: &[Pair], baseline_steps: usize, tail: usize) -> Figures {
    let n = pairs.len();
    let (mut sum_rel, mut sum_abs_rel, mut sum_diff, mut sum_abs) = (0.0, 0.0, 0.0, 0.0);
    let mut rel_n = 0usize;
    let mut max_abs = Extreme {
        value: f64::NEG_INFINITY,
        at: pairs[0].key,
        index: 0,
    };
    let mut max_rel = max_abs;
    for (i, p) in pairs.iter().enumerate() {
        let d = p.diff();
        sum_diff += d;
        sum_abs += d.abs();
        if d.abs() > max_abs.value {
            max_abs = Extreme {
                value: d.abs(),
                at: p.key,
                index: i,
            };
        }
        if p.baseline != 0.0 {
            let r = p.rel();
            sum_rel += r;
            sum_abs_rel += r.abs();
            rel_n += 1;
            if r.abs() > max_rel.value {
                max_rel = Extreme {
                    value: r.abs(),
                    at: p.key,
                    index: i,
                };
            }
        }
    }
    if rel_n == 0 {
        max_rel.value = f64::NAN;
    }
    let tail = tail.min(n);
    let last = &pairs[n - tail..];
    let final_baseline = last.iter().map(|p| p.baseline).sum::<f64>() / tail as f64;
    let final_candidate = last.iter().map(|p| p.candidate).sum::<f64>() / tail as f64;
    Figures {
        steps_compared: n,
        mean_rel_err_signed: sum_rel / rel_n as f64,
        mean_rel_err_abs: sum_abs_rel / rel_n as f64,
        mean_diff_signed: sum_diff / n as f64,
        mean_abs_err: sum_abs / n as f64,
        max_abs_err: max_abs,
        max_rel_err: max_rel,
        zero_baseline_steps: n - rel_n,
        non_finite_steps: pairs
            .iter()
            .filter(|p| !(p.baseline.is_finite() && p.candidate.is_finite()))
            .count(),
        baseline_steps,
        coverage: if baseline_steps == 0 {
            1.0
        } else {
            (n as f64 / baseline_steps as f64).min(1.0)
        },
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
                "{} paired step(s) hold NaN or infinite values; the figures are not meaningful",
                f.non_finite_steps
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
                    "mean((c-b)/b) = {:.6e} {} {MODELZOO_LOSS_MEAN_REL}, mean(c-b) = {:.6e} {} {MODELZOO_LOSS_MEAN_DIFF} (passes when either holds; {} steps paired by position)",
                    f.mean_rel_err_signed,
                    if by_rel { "≤" } else { ">" },
                    f.mean_diff_signed,
                    if by_diff { "≤" } else { ">" },
                    f.steps_compared
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
pub fn pct(x: f64) -> String {
    format!("{:.4}%", x * 100.0)
}
