//! The step-by-step verdict of an fp32 CPU baseline. The SDAA emulator runs the CPU's own
//! kernels, so a faithful port computes what its original computes: its losses match the
//! original's at every step, to float noise. The original runs twice; the difference between
//! those two runs is the measured noise, and a port whose loss leaves the tolerance at any step
//! computed something else there — a bug a 1% rule on the last steps' mean can hide.
//!
//! Tolerance at a step = max(noise, print, floor):
//! - noise: the largest |difference| between the two runs of the original over all steps;
//! - print: one unit of the last decimal place the logs print (the finest any value of either
//!   series shows, e.g. `2.3000` → 1e-4): each printed value is up to half a unit from what
//!   was computed, so two printed values of one number differ by up to one unit;
//! - floor: [`FLOOR_ULPS`] float32 ulps relative to the larger of the two values.
//!
//! The original is not reproducible when its two runs differ at the first step by more than
//! [`REPRODUCIBLE_REL`] relative (and more than the print unit), or log different numbers of
//! steps: then nothing can be judged step by step.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The floor of the tolerance, in float32 ulps (2⁻²³ relative each).
pub const FLOOR_ULPS: f64 = 4.0;
/// float32's machine epsilon.
const F32_EPS: f64 = 1.192_092_895_507_812_5e-7;
/// Two runs of a reproducible original agree at their first step to this relative
/// difference (float noise; the same kernels on the same inputs usually agree bit for bit).
pub const REPRODUCIBLE_REL: f64 = 1e-6;

/// One value of a loss series, where the log says it was.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub epoch: Option<u64>,
    pub iteration: Option<u64>,
    pub value: f64,
}

/// One metric of one run, rank 0, in log order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub metric: String,
    pub points: Vec<Point>,
}

impl Series {
    /// The rank-0 values of `metric` in the log at `path` (any format the dllogger reader
    /// knows).
    pub fn read(path: &Path, metric: &str) -> Result<Series, String> {
        let mut reader =
            dllogger::open(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let mut points = Vec::new();
        while let Some(record) = reader
            .try_next()
            .map_err(|e| format!("reading {}: {e}", path.display()))?
        {
            if record.rank != 0 || record.step_name.is_some() {
                continue;
            }
            if let Some(value) = record.get(metric) {
                points.push(Point {
                    epoch: record.epoch,
                    iteration: record.iteration,
                    value,
                });
            }
        }
        if points.is_empty() {
            return Err(format!("no `{metric}` for rank 0 in {}", path.display()));
        }
        Ok(Series {
            metric: metric.to_string(),
            points,
        })
    }

    /// One unit of the finest decimal place any value shows (the shortest decimal that reads
    /// back as the value: `2.3` printed as `2.3000` shows 0.1 alone, but the series' other
    /// values show 1e-4).
    pub fn print_unit(&self) -> f64 {
        self.points
            .iter()
            .filter(|p| p.value.is_finite() && p.value != 0.0)
            .map(|p| decimal_unit(p.value))
            .fold(f64::INFINITY, f64::min)
    }
}

/// One unit of the last digit of `v`'s shortest decimal form.
fn decimal_unit(v: f64) -> f64 {
    let s = format!("{:e}", v.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let frac = mantissa.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    let exp: i32 = exp.parse().unwrap_or(0);
    10f64.powi(exp - frac)
}

/// Where a value is, for a person: the log's own step when it gives one, else its position.
pub(crate) fn label(p: &Point, index: usize) -> String {
    match (p.epoch, p.iteration) {
        (Some(e), Some(i)) => format!("epoch {e} step {i}"),
        (None, Some(i)) => format!("step {i}"),
        (Some(e), None) => format!("epoch {e}"),
        (None, None) => format!("value #{} (by order: the log numbers no steps)", index + 1),
    }
}

/// Pairs two series: by the log's (epoch, step) and occurrence when every value of both has
/// one, else by order. Err: they do not hold the same steps.
fn pair<'a>(a: &'a Series, b: &'a Series) -> Result<Vec<(String, f64, f64)>, String> {
    let keyed = |s: &Series| {
        s.points
            .iter()
            .all(|p| p.epoch.is_some() || p.iteration.is_some())
    };
    if a.points.len() != b.points.len() {
        return Err(format!(
            "{} values against {}",
            a.points.len(),
            b.points.len()
        ));
    }
    let mut out = Vec::with_capacity(a.points.len());
    let by_key = keyed(a) && keyed(b);
    for (i, (p, q)) in a.points.iter().zip(&b.points).enumerate() {
        if by_key && (p.epoch, p.iteration) != (q.epoch, q.iteration) {
            return Err(format!(
                "value #{} is at {} in one and at {} in the other",
                i + 1,
                label(p, i),
                label(q, i)
            ));
        }
        out.push((label(p, i), p.value, q.value));
    }
    Ok(out)
}

/// The first step where the port left the tolerance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepFailure {
    pub step: String,
    pub baseline: f64,
    pub candidate: f64,
    pub difference: f64,
    pub tolerance: f64,
}

/// How one metric was judged step by step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// Every step within its tolerance.
    Pass,
    /// The first step beyond its tolerance.
    Fail(StepFailure),
    /// The port and the original did not log the same steps.
    StepsDiffer { why: String },
}

/// The figures of one metric's step-by-step judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    pub metric: String,
    pub steps: usize,
    /// Largest |difference| of the original's two runs over the steps.
    pub noise: f64,
    /// One unit of the last printed decimal.
    pub print_unit: f64,
    /// Largest |port − original| and the largest relative one over the steps compared.
    pub max_difference: f64,
    pub max_rel_difference: f64,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// The original's two runs of one metric: are they the same computation? Ok(noise): the
/// largest |difference| over the steps; Err: why not, with the spread (largest relative
/// difference over the steps).
pub fn reproducibility(first: &Series, second: &Series) -> Result<f64, String> {
    let pairs = pair(first, second).map_err(|why| {
        format!(
            "its two runs did not log the same steps of `{}` ({why})",
            first.metric
        )
    })?;
    let unit = first.print_unit().max(second.print_unit());
    let unit = if unit.is_finite() { unit } else { 0.0 };
    let mut noise: f64 = 0.0;
    let mut spread: f64 = 0.0;
    for (_, a, b) in &pairs {
        if a.is_finite() && b.is_finite() {
            noise = noise.max((a - b).abs());
            spread = spread.max(rel(*a, *b));
        }
    }
    if let Some((step, a, b)) = pairs.first() {
        let diff = (a - b).abs();
        let differs = if a.is_finite() && b.is_finite() {
            diff > (REPRODUCIBLE_REL * a.abs().max(b.abs())).max(unit) * (1.0 + 1e-9)
        } else {
            !(a.is_nan() && b.is_nan()) && a != b
        };
        if differs {
            return Err(format!(
                "its two runs differ already at {} (their first value) of `{}`: {a} and {b} (spread over the steps: largest relative difference {})",
                step,
                first.metric,
                fmt_rel(spread)
            ));
        }
    }
    Ok(noise)
}

/// The port's series against the original's, step by step, with the noise the original's
/// two runs measured (0 when it ran once).
pub fn judge(baseline: &Series, candidate: &Series, noise: f64) -> Judged {
    let unit = baseline.print_unit().max(candidate.print_unit());
    let unit = if unit.is_finite() { unit } else { 0.0 };
    let mut judged = Judged {
        metric: baseline.metric.clone(),
        steps: 0,
        noise,
        print_unit: unit,
        max_difference: 0.0,
        max_rel_difference: 0.0,
        outcome: Outcome::Pass,
    };
    let pairs = match pair(baseline, candidate) {
        Ok(p) => p,
        Err(why) => {
            judged.outcome = Outcome::StepsDiffer {
                why: format!(
                    "the original logged {} values of `{}` and the port {}: {why}",
                    baseline.points.len(),
                    baseline.metric,
                    candidate.points.len()
                ),
            };
            return judged;
        }
    };
    judged.steps = pairs.len();
    for (step, b, c) in pairs {
        let diff = (c - b).abs();
        let floor = FLOOR_ULPS * F32_EPS * b.abs().max(c.abs());
        let tolerance = noise.max(unit).max(floor);
        let bad = if b.is_finite() && c.is_finite() {
            judged.max_difference = judged.max_difference.max(diff);
            judged.max_rel_difference = judged.max_rel_difference.max(rel(b, c));
            diff > tolerance * (1.0 + 1e-9)
        } else {
            !(b.is_nan() && c.is_nan()) && b != c
        };
        if bad && judged.outcome == Outcome::Pass {
            judged.outcome = Outcome::Fail(StepFailure {
                step,
                baseline: b,
                candidate: c,
                difference: diff,
                tolerance,
            });
        }
    }
    judged
}

fn rel(a: f64, b: f64) -> f64 {
    let scale = a.abs().max(b.abs());
    if scale == 0.0 {
        0.0
    } else {
        (a - b).abs() / scale
    }
}

/// A relative difference as a percentage with enough digits to see float noise.
pub fn fmt_rel(r: f64) -> String {
    format!("{:.3e} ({:.4}%)", r, r * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: &[f64], keyed: bool) -> Series {
        Series {
            metric: "loss".into(),
            points: values
                .iter()
                .enumerate()
                .map(|(i, &v)| Point {
                    epoch: None,
                    iteration: keyed.then_some(i as u64),
                    value: v,
                })
                .collect(),
        }
    }

    #[test]
    fn the_print_unit_is_the_finest_decimal_shown() {
        assert_eq!(series(&[2.3, 2.1234], true).print_unit(), 1e-4);
        assert!((series(&[1.5e-5], true).print_unit() - 1e-6).abs() < 1e-20);
    }

    #[test]
    fn a_step_beyond_noise_print_and_floor_fails_naming_it() {
        let b = series(&[2.3017, 2.1000, 1.9000], true);
        // One print unit off at step 1: rounding of one number printed twice.
        let ok = series(&[2.3017, 2.1001, 1.9000], true);
        assert_eq!(judge(&b, &ok, 0.0).outcome, Outcome::Pass);
        let bad = series(&[2.3017, 2.1000, 1.9100], true);
        let j = judge(&b, &bad, 0.0);
        let Outcome::Fail(f) = &j.outcome else {
            panic!("{j:?}")
        };
        assert_eq!(f.step, "step 2");
        assert!((f.difference - 0.01).abs() < 1e-9 && (f.tolerance - 1e-4).abs() < 1e-12);
        // The measured noise widens the tolerance.
        assert_eq!(judge(&b, &bad, 0.02).outcome, Outcome::Pass);
        // Different step counts are not a drift.
        let short = series(&[2.3017, 2.1000], true);
        assert!(matches!(
            judge(&b, &short, 0.0).outcome,
            Outcome::StepsDiffer { .. }
        ));
    }

    #[test]
    fn full_precision_values_are_judged_by_the_float32_floor() {
        let b = series(&[2.302585124969482], false);
        let noise_only = series(&[2.302585124969482 * (1.0 + 2e-7)], false);
        assert_eq!(judge(&b, &noise_only, 0.0).outcome, Outcome::Pass);
        let off = series(&[2.302585124969482 * (1.0 + 1e-5)], false);
        assert!(matches!(judge(&b, &off, 0.0).outcome, Outcome::Fail(_)));
    }

    #[test]
    fn an_original_whose_runs_differ_at_the_first_step_is_not_reproducible() {
        let a = series(&[2.3017, 2.2, 2.1], true);
        assert_eq!(reproducibility(&a, &a.clone()).unwrap(), 0.0);
        let b = series(&[2.4017, 2.25, 2.1], true);
        let err = reproducibility(&a, &b).unwrap_err();
        assert!(err.contains("at step 0 (their first value)"), "{err}");
        assert!(err.contains("spread"), "{err}");
        let later = series(&[2.3017, 2.25, 2.1], true);
        assert!((reproducibility(&a, &later).unwrap() - 0.05).abs() < 1e-9);
    }
}
