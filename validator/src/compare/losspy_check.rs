//! Whether ModelZoo's loss.py would read the two logs the way this comparison did.

use super::{counted, LossPyCheck, Options, Series, Verdict};
use crate::losspy;

/// Compare loss.py's reading of the logs with what this comparison's rule used, and say how
/// they differ.
pub(super) fn losspy_check(
    baseline: &Series,
    candidate: &Series,
    b: &losspy::Extraction,
    c: &losspy::Extraction,
    verdict: &Verdict,
    options: &Options,
) -> LossPyCheck {
    let outcome = losspy::outcome(b, c);
    let same_bits = |x: f64, y: f64| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
    let mut parts: Vec<String> = Vec::new();
    let unread: Vec<&str> = [("baseline", b), ("candidate", c)]
        .iter()
        .filter(|(_, e)| e.pattern == losspy::Pattern::None)
        .map(|(role, _)| *role)
        .collect();
    if !unread.is_empty() {
        parts.push(format!(
            "loss.py's regex reads 0 values of the {} (neither `{}` nor its fallback `{}` matches anywhere in {})",
            unread.join(" and 0 of the "),
            losspy::PRIMARY,
            losspy::FALLBACK,
            if unread.len() == 1 { "it" } else { "them" }
        ));
    }
    let mut same_values = unread.is_empty();
    for (role, series, e) in [("baseline", baseline, b), ("candidate", candidate, c)] {
        let ours = series.steps.values();
        let non_finite = ours.iter().filter(|v| !v.is_finite()).count();
        if e.pattern == losspy::Pattern::None {
            // Said above.
        } else if e.len() != ours.len() {
            same_values = false;
            let mut why = Vec::new();
            if e.pattern == losspy::Pattern::Fallback {
                why.push(format!("from its fallback `{}`", losspy::FALLBACK));
            }
            if non_finite > 0 {
                why.push(format!(
                    "its pattern cannot read nan or inf: this comparison has {non_finite} such value(s)"
                ));
            }
            parts.push(format!(
                "loss.py's regex reads {} of the {role} where this comparison reads {}{}",
                counted(e.len() as u64, "value"),
                ours.len(),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", why.join("; "))
                }
            ));
        } else if let Some(i) = (0..ours.len()).find(|&i| !same_bits(ours[i], e.values[i])) {
            same_values = false;
            let read = match &e.first_unparsable {
                Some(u) if u.index == i => format!("captures `{}`", u.text),
                _ => format!("reads {}", e.values[i]),
            };
            parts.push(format!(
                "loss.py's regex {read} as the {role}'s value {} ({}) where this comparison reads {}",
                i + 1,
                series.steps.key(i),
                ours[i]
            ));
        }
    }
    let rule_alone = |pass: bool| if pass { "passes" } else { "fails" };
    match (&outcome.unconverted, outcome.pass) {
        (Some((role, u)), _) if u.too_long => parts.push(format!(
            "loss.py's capture {} of the {role} is over {} characters long: its verdict is not reproduced",
            u.index + 1,
            losspy::MAX_CAPTURE
        )),
        (Some((role, u)), _) => parts.push(format!(
            "loss.py itself would stop with a ValueError: float() rejects `{}`, the {role}'s value {} as its regex reads it",
            u.text,
            u.index + 1
        )),
        (None, _) if outcome.steps == 0 => {
            parts.push("loss.py itself would fail (the mean of no values is NaN)".into())
        }
        (None, Some(pass)) if pass != verdict.pass || !parts.is_empty() => parts.push(format!(
            "loss.py would compare {} and {}: mean((c-b)/b) = {:.6e}, mean(c-b) = {:.6e}{}",
            counted(outcome.steps as u64, "step"),
            if pass { "pass" } else { "fail" },
            outcome.mean_rel,
            outcome.mean_diff,
            if pass != verdict.pass {
                format!(
                    " — this comparison {}, and its verdict stands",
                    rule_alone(verdict.pass)
                )
            } else {
                String::new()
            }
        )),
        _ => {}
    }
    if !parts.is_empty() && (baseline.metric != "train.loss" || options.rank != 0) {
        parts.insert(
            0,
            format!(
                "loss.py reads rank 0's train.loss, whatever --metric ({}) and --rank ({}) say",
                baseline.metric, options.rank
            ),
        );
    }
    let note = (!parts.is_empty()).then(|| parts.join("; "));
    LossPyCheck {
        outcome,
        same_values,
        note,
    }
}
