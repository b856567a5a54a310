//! The mAP rule (docs/compare.md, "Detection logs"): a detection port is accepted on its
//! accuracy, the COCO mAP its evaluation prints (`val.mAP`, `val.segm_mAP`, read by dllogger
//! from pycocotools' summary or mmdetection's lines), not only on its loss. Higher is better,
//! so only a candidate below the baseline can fail: by more than 1% of the baseline's mAP
//! (ModelZoo's acceptance, "accuracy within 1% of CUDA"), or by more than 0.005 (half an mAP
//! point) when that is larger — a short run's mAP is near 0, where 1% of it is below the
//! summary's printed precision (3 decimals) and a relative rule would fail on rounding.

use std::collections::BTreeMap;

use super::Verdict;

/// The relative part of the mAP rule: ModelZoo's 1%.
pub const MAP_REL_TOL: f64 = 0.01;

/// The absolute floor of the mAP rule: half an mAP point, five units of the summary's last
/// printed decimal.
pub const MAP_ABS_FLOOR: f64 = 0.005;

/// Whether an eval metric is judged by the mAP rule: `val.mAP` (boxes) and the other IoU
/// types' `val.<type>_mAP` (`val.segm_mAP`, `val.keypoints_mAP`).
pub fn is_map_metric(name: &str) -> bool {
    name.strip_prefix("val.").is_some_and(|n| {
        n == "mAP"
            || n.strip_suffix("_mAP")
                .is_some_and(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric()))
    })
}

/// How far below the baseline's mAP the candidate's may be: max(1% of it, 0.005).
pub fn map_allowance(baseline: f64) -> f64 {
    (MAP_REL_TOL * baseline.abs()).max(MAP_ABS_FLOOR)
}

/// Whether `candidate` passes the mAP rule against `baseline` (a NaN fails).
pub fn map_passes(baseline: f64, candidate: f64) -> bool {
    // An allowance that is the limit in decimal passes despite binary rounding.
    baseline - candidate <= map_allowance(baseline) * (1.0 + 1e-9)
}

/// Applies the mAP rule to every mAP metric both logs have (their last values): a failing
/// one fails the verdict, and each is said in its reason; an mAP only the baseline has is
/// warned about (the candidate's evaluation did not run, or printed nothing readable).
pub(super) fn judge(
    baseline: &BTreeMap<String, f64>,
    candidate: &BTreeMap<String, f64>,
    verdict: &mut Verdict,
) {
    for (metric, &b) in baseline.iter().filter(|(k, _)| is_map_metric(k)) {
        let Some(&c) = candidate.get(metric) else {
            verdict.warnings.push(format!(
                "the baseline's evaluation gives `{metric}` {b} and the candidate's none: its mAP is not judged (did the candidate's evaluation run?)"
            ));
            continue;
        };
        let allowed = map_allowance(b);
        let words = format!(
            "`{metric}` (higher is better): candidate {c} vs baseline {b}, {} — the mAP rule allows at most max({}% of the baseline, {MAP_ABS_FLOOR}) = {allowed:.4} lower",
            if c >= b {
                "not lower".to_string()
            } else {
                format!("{:.4} lower", b - c)
            },
            MAP_REL_TOL * 100.0
        );
        if map_passes(b, c) {
            verdict.reason = format!("{}; {words}: PASS", verdict.reason);
        } else {
            verdict.reason = if verdict.pass {
                format!("{words}: FAIL (the loss alone: PASS: {})", verdict.reason)
            } else {
                format!("{}; and {words}: FAIL", verdict.reason)
            };
            verdict.pass = false;
            verdict.rule_pass = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Rule;
    use super::*;

    fn judged(b: &[(&str, f64)], c: &[(&str, f64)]) -> Verdict {
        let map = |v: &[(&str, f64)]| v.iter().map(|(k, x)| (k.to_string(), *x)).collect();
        let mut v = Verdict {
            rule: Rule::Rel1 { threshold: 0.01 },
            pass: true,
            rule_pass: true,
            reason: "loss ok".into(),
            warnings: Vec::new(),
        };
        judge(&map(b), &map(c), &mut v);
        v
    }

    #[test]
    fn lower_by_more_than_one_percent_or_the_floor_fails_higher_passes() {
        // 1% of 0.57 is 0.0057: 0.565 passes, 0.564 fails.
        assert!(judged(&[("val.mAP", 0.570)], &[("val.mAP", 0.565)]).pass);
        let v = judged(&[("val.mAP", 0.570)], &[("val.mAP", 0.564)]);
        assert!(!v.pass && !v.rule_pass);
        assert!(
            v.reason.starts_with("`val.mAP` (higher is better)"),
            "{}",
            v.reason
        );
        assert!(
            v.reason.contains("(the loss alone: PASS: loss ok)"),
            "{}",
            v.reason
        );
        // Near 0 the floor rules: 0.002 below a 0.010 baseline is 20% but passes.
        assert!(judged(&[("val.mAP", 0.010)], &[("val.mAP", 0.008)]).pass);
        assert!(judged(&[("val.mAP", 0.010)], &[("val.mAP", 0.005)]).pass);
        assert!(!judged(&[("val.mAP", 0.010)], &[("val.mAP", 0.004)]).pass);
        // Higher is better: a much higher candidate passes.
        let v = judged(&[("val.mAP", 0.3)], &[("val.mAP", 0.5)]);
        assert!(v.pass && v.reason.contains("not lower"), "{}", v.reason);
        // A NaN mAP fails.
        assert!(!judged(&[("val.mAP", 0.3)], &[("val.mAP", f64::NAN)]).pass);
    }

    #[test]
    fn segm_map_is_judged_ap50_is_not_and_a_missing_map_is_warned() {
        let v = judged(
            &[("val.mAP", 0.4), ("val.segm_mAP", 0.35), ("val.AP50", 0.6)],
            &[("val.mAP", 0.4), ("val.segm_mAP", 0.30), ("val.AP50", 0.1)],
        );
        assert!(!v.pass);
        assert!(v.reason.contains("`val.segm_mAP`"), "{}", v.reason);
        assert!(!v.reason.contains("AP50"), "{}", v.reason);
        let v = judged(&[("val.mAP", 0.4)], &[]);
        assert!(v.pass);
        assert!(
            v.warnings[0].contains("the candidate's none"),
            "{:?}",
            v.warnings
        );
        assert!(is_map_metric("val.keypoints_mAP"));
        assert!(!is_map_metric("val.AP50") && !is_map_metric("mAP") && !is_map_metric("val._mAP"));
    }
}
