//! The noise floor: how far a second baseline run (another seed) deviates from the baseline,
//! the yardstick for the candidate's deviation.

use std::path::Path;

use super::steps::Pairs;
use super::{pct, same_file, Align, CompareError, NoiseFloor, NoiseVerdict, Options, Series};

/// Measure the noise floor: pair the noise run with the compared steps as the candidate was
/// paired with the baseline (`align`), keep the steps paired in all three logs where the
/// baseline is non-zero and every value finite, and compare the candidate's mean |relative
/// deviation| with the noise run's. Returns the floor and the warnings it raises.
pub(super) fn noise_floor(
    baseline: &Path,
    mut noise: Series,
    pairs: &Pairs,
    align: Align,
    options: &Options,
) -> Result<(NoiseFloor, Vec<String>), CompareError> {
    let mut warnings = Vec::new();
    let same = same_file(baseline, &noise.path);
    if same {
        warnings.push(format!(
            "baseline and noise run are the same file ({}): the noise floor is zero — give a baseline run with another seed",
            noise.path.display()
        ));
    }
    // The noise run's value at each compared step: by position, or merged by key (the pairs
    // are in key order, as the noise run's keyed points are).
    let mut triples: Vec<(f64, f64, f64)> = Vec::new(); // (b, c, n)
    match align {
        Align::Order => {
            for (i, &n) in noise.steps.values().iter().enumerate().take(pairs.len()) {
                triples.push((pairs.baseline()[i], pairs.candidate()[i], n));
            }
        }
        Align::Key => {
            let mut points = noise.steps.keyed();
            let mut next = points.next();
            for p in pairs.iter() {
                while next.is_some_and(|n| n.key < p.key) {
                    next = points.next();
                }
                if let Some(n) = next.filter(|n| n.key == p.key) {
                    triples.push((p.baseline, p.candidate, n.value));
                    next = points.next();
                }
            }
        }
    }
    if triples.is_empty() {
        return Err(CompareError::Read {
            role: "noise",
            path: noise.path.clone(),
            message: format!(
                "none of its {} values of `{}` is at a step the baseline and candidate were compared on — it must be a run of the baseline's configuration (another seed); try --align order to pair by position",
                noise.values, noise.metric
            ),
        });
    }
    let paired = triples.len();
    triples.retain(|&(b, c, n)| b != 0.0 && b.is_finite() && c.is_finite() && n.is_finite());
    let steps = triples.len();
    if paired < pairs.len() {
        warnings.push(format!(
            "the noise run covers {paired} of the {} compared steps: the noise floor is measured on those",
            pairs.len()
        ));
    }
    if steps < paired {
        warnings.push(format!(
            "{} of the {paired} steps shared with the noise run have a baseline of 0 or a NaN/infinite value and are left out of the noise floor",
            paired - steps
        ));
    }
    let mean = |xs: &mut dyn Iterator<Item = f64>, n: usize| xs.sum::<f64>() / n as f64;
    let (noise_dev, candidate_dev) = if steps == 0 {
        (f64::NAN, f64::NAN)
    } else {
        (
            mean(
                &mut triples.iter().map(|&(b, _, n)| ((n - b) / b).abs()),
                steps,
            ),
            mean(
                &mut triples.iter().map(|&(b, c, _)| ((c - b) / b).abs()),
                steps,
            ),
        )
    };
    let tail = options.tail.max(1).min(steps);
    let last = &triples[steps - tail..];
    let (fb, fc, fnz) = if tail == 0 {
        (f64::NAN, f64::NAN, f64::NAN)
    } else {
        (
            mean(&mut last.iter().map(|t| t.0), tail),
            mean(&mut last.iter().map(|t| t.1), tail),
            mean(&mut last.iter().map(|t| t.2), tail),
        )
    };
    let factor = options.noise_factor;
    let rule = format!(
        "within run-to-run variation when the candidate's mean |relative deviation| from the baseline, mean(|c−b|/|b|), is at most {factor} × the noise run's, mean(|n−b|/|b|), over the steps all three logs share"
    );
    let ratio = (noise_dev > 0.0).then(|| candidate_dev / noise_dev);
    let (verdict, reason) = match ratio {
        None if steps == 0 => (
            NoiseVerdict::Undefined,
            format!("none of the {paired} steps shared with the noise run is usable (baseline 0 or NaN/infinite values): no noise floor"),
        ),
        None => (
            NoiseVerdict::Undefined,
            format!(
                "the noise run equals the baseline at all {steps} shared steps: the noise floor is zero, so comparing against it is meaningless — give a baseline run with another seed (candidate deviation {})",
                pct(candidate_dev)
            ),
        ),
        Some(r) => {
            // A ratio that is the factor in decimal passes despite binary rounding.
            let within = r <= factor * (1.0 + 1e-9);
            (
                if within {
                    NoiseVerdict::Within
                } else {
                    NoiseVerdict::Exceeds
                },
                format!(
                    "candidate deviation {} / noise deviation {} = {r:.3} {} {factor} over {steps} step(s)",
                    pct(candidate_dev),
                    pct(noise_dev),
                    if within { "≤" } else { ">" }
                ),
            )
        }
    };
    noise.steps.clear();
    Ok((
        NoiseFloor {
            path: noise.path,
            values: noise.values,
            steps,
            steps_compared: pairs.len(),
            noise_dev,
            candidate_dev,
            ratio,
            factor,
            tail,
            noise_final_dev: ((fnz - fb) / fb).abs(),
            candidate_final_dev: ((fc - fb) / fb).abs(),
            verdict,
            rule,
            reason,
            same_file: same,
            gate: options.noise_gate,
        },
        warnings,
    ))
}
