//! Per-tensor metrics and the rules that judge them (docs/diff.md states the same rules).
//!
//! Full tensors: one pass over both (and the reference's) elements in f64, msprobe's metrics
//! and thresholds. Stats only: the four statistics compared at the baseline's scale.
//!
//! The small-value rule (msprobe's, the same numbers as `modelzoo op check`'s harness,
//! python/modelzoo_opcheck): a tensor whose every element is below the small-value threshold
//! of its dtype ([`small_value_threshold`]) in magnitude — a gradient that is zero in theory
//! and 1e-11 in float32 — has no direction and no scale to measure relative errors at; it is
//! judged by its absolute error, which must not exceed the threshold.

use serde::Serialize;

use super::dump::Record;
use super::npy::Npy;

/// msprobe: "not reached" when cosine < 0.99 and max_abs > 0.001 …
pub const COSINE_MIN: f64 = 0.99;
/// … or when max_abs > 0.001 goes with such a cosine …
pub const MAX_ABS_TOLERANCE: f64 = 0.001;
/// … or cosine < 0.9 …
pub const COSINE_FLOOR: f64 = 0.9;
/// … or max_abs > 1.
pub const MAX_ABS_LIMIT: f64 = 1.0;
/// Relative error of one element: |c − b| / max(|b|, REL_EPS), so exact zeros do not divide.
pub const REL_EPS: f64 = 1e-10;
/// Stats only: a statistic differing by more than 1% of the baseline tensor's RMS fails.
pub const STATS_TOLERANCE: f64 = 0.01;
/// With a reference: candidate error / baseline error ≤ 1 passes, ≤ 2 warns, above fails.
pub const RATIO_WARN: f64 = 2.0;
/// The error floor in the ratio: one float32 epsilon (relative to the reference's RMS), so
/// two exact results read 1, not 0/0.
pub const ERROR_FLOOR: f64 = f32::EPSILON as f64;

/// msprobe's small-value threshold for float32 (and any dtype not below: float64, integers):
/// 2^-14 (api_accuracy_checker `StandardConfig._minmum_err`).
pub const SMALL_VALUE_F32: f64 = 1.0 / 16384.0;
/// … for float16: 2^-11.
pub const SMALL_VALUE_F16: f64 = 1.0 / 2048.0;
/// … for bfloat16: 2^-8.
pub const SMALL_VALUE_BF16: f64 = 1.0 / 256.0;

/// The small-value threshold of a dump's dtype name (`float16`, `torch.bfloat16`, …).
pub fn small_value_threshold(dtype: &str) -> f64 {
    match dtype.trim_start_matches("torch.") {
        "float16" | "half" => SMALL_VALUE_F16,
        "bfloat16" => SMALL_VALUE_BF16,
        _ => SMALL_VALUE_F32,
    }
}

/// The threshold a pair of records is judged at: the coarser of their dtypes'.
pub fn small_value_threshold_of(baseline: &str, candidate: &str) -> f64 {
    small_value_threshold(baseline).max(small_value_threshold(candidate))
}

/// Elements decoded per chunk: small enough for L1/L2, large enough to amortise the loop.
const CHUNK: usize = 8192;

/// A record's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Warn,
    Fail,
}

impl Status {
    /// The word shown in reports.
    pub fn word(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// What was measured between baseline and candidate; `None` where the mode does not give it
/// (full-tensor metrics with stats-only dumps, `stat_diff` with full tensors).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Metrics {
    pub cosine: Option<f64>,
    pub max_abs: Option<f64>,
    pub max_rel: Option<f64>,
    pub rmse: Option<f64>,
    #[serde(rename = "within_1e-3")]
    pub within_1e3: Option<f64>,
    #[serde(rename = "within_5e-3")]
    pub within_5e3: Option<f64>,
    /// Elements that are NaN/Inf in one tensor and not the same in the other (stats only:
    /// the difference of the NaN and Inf counts).
    pub nan_inf_mismatch: Option<u64>,
    /// NaN/Inf elements in the candidate, whatever the baseline and the reference hold there:
    /// any fails the record (`None` where the dump does not count them: msprobe).
    pub candidate_non_finite: Option<u64>,
    /// Stats only: the largest statistic difference over the baseline's RMS (near zero: the
    /// largest absolute difference).
    pub stat_diff: Option<f64>,
    /// The small-value threshold the record was judged at (its dtype's).
    pub small_value_threshold: Option<f64>,
    /// Every finite baseline element is below the small-value threshold in magnitude: the
    /// record is judged by its absolute error (≤ the threshold), not by cosine or scale.
    pub near_zero: Option<bool>,
    /// Full tensors: elements whose baseline is below the threshold and whose candidate is
    /// further from it than the threshold.
    pub small_value_errors: Option<u64>,
}

/// Baseline's and candidate's errors against the fp64 reference, and their ratio.
#[derive(Debug, Clone, Serialize)]
pub struct Arbitration {
    pub baseline_error: f64,
    pub candidate_error: f64,
    pub ratio: f64,
    pub verdict: Status,
    /// The reference is near zero: the errors are absolute, each floored at the small-value
    /// threshold in the ratio (an error within it is no error).
    pub absolute: bool,
}

impl Arbitration {
    /// Judge two errors (already relative to the reference's scale).
    pub fn new(baseline_error: f64, candidate_error: f64) -> Arbitration {
        Arbitration::judge(baseline_error, candidate_error, ERROR_FLOOR, false)
    }

    /// Judge two absolute errors against a near-zero reference, floored at the small-value
    /// threshold `small`.
    pub fn absolute(baseline_error: f64, candidate_error: f64, small: f64) -> Arbitration {
        Arbitration::judge(baseline_error, candidate_error, small, true)
    }

    fn judge(baseline_error: f64, candidate_error: f64, floor: f64, absolute: bool) -> Arbitration {
        let ratio = candidate_error.max(floor) / baseline_error.max(floor);
        let verdict = if ratio <= 1.0 {
            Status::Pass
        } else if ratio <= RATIO_WARN {
            Status::Warn
        } else {
            Status::Fail
        };
        Arbitration {
            baseline_error,
            candidate_error,
            ratio,
            verdict,
            absolute,
        }
    }
}

#[derive(Default)]
struct Acc {
    /// The small-value threshold.
    small: f64,
    /// Largest finite |baseline| and |reference|.
    b_max: f64,
    r_max: f64,
    small_err: u64,
    /// Largest |baseline − reference| and |candidate − reference|.
    eb_max: f64,
    ec_max: f64,
    n: u64,
    finite: u64,
    dot: f64,
    bb: f64,
    cc: f64,
    sq: f64,
    max_abs: f64,
    max_rel: f64,
    w1: u64,
    w5: u64,
    mismatch: u64,
    cand_bad: u64,
    // against the reference
    eb: f64,
    ec: f64,
    rr: f64,
    ref_n: u64,
}

impl Acc {
    #[inline]
    fn push(&mut self, x: f64, y: f64) {
        self.n += 1;
        self.cand_bad += u64::from(!y.is_finite());
        if x.is_finite() && y.is_finite() {
            let d = (y - x).abs();
            self.b_max = self.b_max.max(x.abs());
            self.small_err += u64::from(x.abs() < self.small && d > self.small);
            self.finite += 1;
            self.dot += x * y;
            self.bb += x * x;
            self.cc += y * y;
            self.sq += d * d;
            self.max_abs = self.max_abs.max(d);
            let rel = d / x.abs().max(REL_EPS);
            self.max_rel = self.max_rel.max(rel);
            self.w1 += u64::from(rel <= 1e-3);
            self.w5 += u64::from(rel <= 5e-3);
        } else if (x.is_nan() && y.is_nan()) || x == y {
            self.w1 += 1;
            self.w5 += 1;
        } else {
            self.mismatch += 1;
        }
    }

    #[inline]
    fn push_ref(&mut self, x: f64, y: f64, r: f64) {
        if x.is_finite() && y.is_finite() && r.is_finite() {
            self.r_max = self.r_max.max(r.abs());
            self.eb_max = self.eb_max.max((x - r).abs());
            self.ec_max = self.ec_max.max((y - r).abs());
            self.eb += (x - r) * (x - r);
            self.ec += (y - r) * (y - r);
            self.rr += r * r;
            self.ref_n += 1;
        }
    }

    fn metrics(&self) -> Metrics {
        let cosine = if self.bb == 0.0 && self.cc == 0.0 {
            1.0
        } else if self.bb == 0.0 || self.cc == 0.0 {
            0.0
        } else {
            (self.dot / (self.bb.sqrt() * self.cc.sqrt())).clamp(-1.0, 1.0)
        };
        let share = |k: u64| {
            if self.n == 0 {
                1.0
            } else {
                k as f64 / self.n as f64
            }
        };
        Metrics {
            cosine: Some(cosine),
            max_abs: Some(self.max_abs),
            max_rel: Some(self.max_rel),
            rmse: Some(if self.finite == 0 {
                0.0
            } else {
                (self.sq / self.finite as f64).sqrt()
            }),
            within_1e3: Some(share(self.w1)),
            within_5e3: Some(share(self.w5)),
            nan_inf_mismatch: Some(self.mismatch),
            candidate_non_finite: Some(self.cand_bad),
            stat_diff: None,
            small_value_threshold: Some(self.small),
            near_zero: Some(self.b_max < self.small),
            small_value_errors: Some(self.small_err),
        }
    }

    fn arbitration(&self) -> Arbitration {
        let n = self.ref_n.max(1) as f64;
        if self.r_max < self.small {
            // Each element is judged by its own absolute error: the largest, not the RMSE
            // (which one drifted element among many would hide).
            return Arbitration::absolute(self.eb_max, self.ec_max, self.small);
        }
        let rms = (self.rr / n).sqrt();
        let scale = if rms > 0.0 { rms } else { 1.0 };
        Arbitration::new((self.eb / n).sqrt() / scale, (self.ec / n).sqrt() / scale)
    }
}

/// Full-tensor metrics of baseline `b` and candidate `c` (same element count), and with a
/// reference `r` the arbitration: RMSE of each against `r`, over `r`'s RMS (a near-zero
/// reference: the largest absolute error, floored at `small`). `small`: the records' small-value threshold.
pub fn full(b: &Npy, c: &Npy, r: Option<&Npy>, small: f64) -> (Metrics, Option<Arbitration>) {
    let mut acc = Acc {
        small,
        ..Acc::default()
    };
    let n = b.len().min(c.len());
    let (mut xb, mut xc, mut xr) = (vec![0.0; CHUNK], vec![0.0; CHUNK], vec![0.0; CHUNK]);
    let r = r.filter(|r| r.len() == n);
    let mut start = 0;
    while start < n {
        let k = CHUNK.min(n - start);
        b.read_f64(start, &mut xb[..k]);
        c.read_f64(start, &mut xc[..k]);
        for i in 0..k {
            acc.push(xb[i], xc[i]);
        }
        if let Some(r) = r {
            r.read_f64(start, &mut xr[..k]);
            for i in 0..k {
                acc.push_ref(xb[i], xc[i], xr[i]);
            }
        }
        start += k;
    }
    (acc.metrics(), r.map(|_| acc.arbitration()))
}

/// A record near zero by its statistics: finite min and max both below `small` in magnitude.
fn stats_near_zero(r: &Record, small: f64) -> Option<bool> {
    Some(r.min?.abs().max(r.max?.abs()) < small)
}

/// Stats-only metrics: each of min, max, mean and l2/√n compared, the difference divided by
/// the baseline's RMS (l2/√n; 1 where that is 0) — for a near-zero baseline, not divided;
/// equal checksums read 0.
pub fn stats(b: &Record, c: &Record, small: f64) -> Metrics {
    let counts = match (b.nan, b.inf, c.nan, c.inf) {
        (Some(bn), Some(bi), Some(cn), Some(ci)) => Some(bn.abs_diff(cn) + bi.abs_diff(ci)),
        _ => None,
    };
    let same = b.checksum.is_some() && b.checksum == c.checksum;
    let near_zero = stats_near_zero(b, small);
    let d = if same {
        0.0
    } else if near_zero == Some(true) {
        stat_abs_diff(b, c)
    } else {
        stat_diff(b, c)
    };
    Metrics {
        nan_inf_mismatch: counts,
        candidate_non_finite: c.nan.zip(c.inf).map(|(n, i)| n + i),
        stat_diff: Some(d),
        small_value_threshold: Some(small),
        near_zero,
        ..Metrics::default()
    }
}

/// The largest of the four statistics' differences, at `b`'s scale.
fn stat_diff(b: &Record, c: &Record) -> f64 {
    let root_n = (b.numel().max(1) as f64).sqrt();
    let rms = b.l2.unwrap_or(0.0) / root_n;
    let scale = if rms > 0.0 { rms } else { 1.0 };
    stat_abs_diff(b, c) / scale
}

/// The largest of the four statistics' absolute differences (l2 over √n).
fn stat_abs_diff(b: &Record, c: &Record) -> f64 {
    let root_n = (b.numel().max(1) as f64).sqrt();
    [
        (b.min, c.min, 1.0),
        (b.max, c.max, 1.0),
        (b.mean, c.mean, 1.0),
        (b.l2, c.l2, root_n),
    ]
    .into_iter()
    .filter_map(|(x, y, div)| Some((y? - x?).abs() / div))
    .fold(0.0, f64::max)
}

/// Stats-only arbitration: each dump's stat difference from the reference's record (a
/// near-zero reference: absolute differences, floored at `small`).
pub fn stats_arbitration(b: &Record, c: &Record, r: &Record, small: f64) -> Arbitration {
    if stats_near_zero(r, small) == Some(true) {
        return Arbitration::absolute(stat_abs_diff(r, b), stat_abs_diff(r, c), small);
    }
    Arbitration::new(stat_diff(r, b), stat_diff(r, c))
}

/// NaN or ±Inf in the candidate fails its record whatever the baseline and the reference
/// hold: a reference that overflowed too (or a baseline that did) does not make a non-finite
/// result right, and the arbitration, which measures errors over finite elements, cannot see
/// it. The failing clause, or `None`.
pub fn non_finite_failure(m: &Metrics, baseline: &Record) -> Option<String> {
    let bad = m.candidate_non_finite.filter(|&k| k > 0)?;
    let in_baseline = baseline.nan.zip(baseline.inf).map(|(n, i)| n + i);
    Some(format!(
        "the candidate holds {bad} NaN/Inf element(s){}: a non-finite result fails whatever the baseline and the reference hold",
        match in_baseline {
            Some(k) if k > 0 => format!(" (the baseline {k})"),
            _ => String::new(),
        }
    ))
}

/// msprobe's rule on full-tensor metrics: the failing clause, or `None` when reached.
pub fn full_failure(m: &Metrics) -> Option<String> {
    let cos = m.cosine.unwrap_or(1.0);
    let abs = m.max_abs.unwrap_or(0.0);
    let bad = m.nan_inf_mismatch.unwrap_or(0);
    if bad > 0 {
        Some(format!("{bad} NaN/Inf element(s) differ"))
    } else if let (Some(true), Some(small)) = (m.near_zero, m.small_value_threshold) {
        // No direction to compare: the absolute error alone.
        (abs > small).then(|| {
            format!("near zero (every |baseline| < {small:.3e}): max_abs {abs:.3e} > {small:.3e}")
        })
    } else if cos < COSINE_FLOOR {
        Some(format!("cosine {cos:.6} < {COSINE_FLOOR}"))
    } else if abs > MAX_ABS_LIMIT {
        Some(format!("max_abs {abs:.3e} > {MAX_ABS_LIMIT}"))
    } else if cos < COSINE_MIN && abs > MAX_ABS_TOLERANCE {
        Some(format!(
            "cosine {cos:.6} < {COSINE_MIN} and max_abs {abs:.3e} > {MAX_ABS_TOLERANCE}"
        ))
    } else {
        None
    }
}

/// The stats-only rule: the failing clause, or `None`.
pub fn stats_failure(m: &Metrics) -> Option<String> {
    let d = m.stat_diff.unwrap_or(0.0);
    match (m.nan_inf_mismatch, m.near_zero, m.small_value_threshold) {
        (Some(k), _, _) if k > 0 => Some(format!("NaN/Inf counts differ by {k}")),
        (_, Some(true), Some(small)) => (d > small).then(|| {
            format!("near zero (every |baseline| < {small:.3e}): a statistic differs by {d:.3e} > {small:.3e}")
        }),
        _ if d > STATS_TOLERANCE => Some(format!(
            "a statistic differs by {d:.3e} of the baseline's RMS (> {STATS_TOLERANCE})"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`full`]'s accumulation over slices (what it does chunk by chunk over .npy files).
    fn full_of(
        b: &[f64],
        c: &[f64],
        r: Option<&[f64]>,
        small: f64,
    ) -> (Metrics, Option<Arbitration>) {
        let mut acc = Acc {
            small,
            ..Acc::default()
        };
        for i in 0..b.len() {
            acc.push(b[i], c[i]);
            if let Some(r) = r {
                acc.push_ref(b[i], c[i], r[i]);
            }
        }
        (acc.metrics(), r.map(|_| acc.arbitration()))
    }

    /// Deterministic noise of amplitude `a`, phase `k`.
    fn noise(n: usize, a: f64, k: f64) -> Vec<f64> {
        (0..n).map(|i| a * (i as f64 * 1.7 + k).sin()).collect()
    }

    fn record(min: f64, max: f64, mean: f64, l2: f64, n: u64) -> Record {
        serde_json::from_value(serde_json::json!({
            "key": "k", "op": "aten::addmm", "call": 0, "phase": "backward", "io": "output",
            "index": 0, "dtype": "float32", "shape": [n], "min": min, "max": max, "mean": mean,
            "l2": l2, "nan": 0, "inf": 0, "checksum": null, "file": null
        }))
        .unwrap()
    }

    #[test]
    fn thresholds_are_msprobes_per_dtype() {
        assert_eq!(small_value_threshold("float32"), 2f64.powi(-14));
        assert_eq!(small_value_threshold("float16"), 2f64.powi(-11));
        assert_eq!(small_value_threshold("torch.bfloat16"), 2f64.powi(-8));
        assert_eq!(small_value_threshold("float64"), 2f64.powi(-14));
        assert_eq!(
            small_value_threshold_of("float32", "bfloat16"),
            2f64.powi(-8)
        );
    }

    /// BERT's attention key-bias gradients: zero in theory, ~1e-11 of rounding noise in
    /// float32, a different noise on each device, (almost) exactly zero in float64.
    #[test]
    fn near_zero_noise_passes_with_and_without_a_reference() {
        let s = SMALL_VALUE_F32;
        let b = noise(768, 1e-11, 0.0);
        let c = noise(768, 1.3e-11, 2.0);
        let r = noise(768, 1e-19, 1.0);
        let (m, a) = full_of(&b, &c, Some(&r), s);
        // msprobe's cosine alone fails it: the noises point anywhere.
        assert!(m.cosine.unwrap() < COSINE_FLOOR, "{m:?}");
        assert_eq!(m.near_zero, Some(true));
        assert_eq!(m.small_value_errors, Some(0));
        assert_eq!(full_failure(&m), None);
        let a = a.unwrap();
        assert!(a.absolute);
        assert_eq!(a.verdict, Status::Pass, "{a:?}");
        // Before the rule, errors over the reference's RMS of 1e-19 made the ratio noise.
        let rel = Arbitration::new(1e-11 / 7e-20, 1.3e-11 / 7e-20);
        assert_eq!(rel.verdict, Status::Warn);
    }

    #[test]
    fn a_real_drift_on_a_near_zero_tensor_still_fails() {
        let s = SMALL_VALUE_F32;
        let b = noise(768, 1e-11, 0.0);
        let mut c = noise(768, 1.3e-11, 2.0);
        c[100] = 1e-3;
        let r = vec![0.0; 768];
        let (m, a) = full_of(&b, &c, Some(&r), s);
        assert_eq!(m.small_value_errors, Some(1));
        let why = full_failure(&m).expect("a drift of 1e-3 fails in float32");
        assert!(
            why.contains("near zero") && why.contains("max_abs 1.000e-3"),
            "{why}"
        );
        assert_eq!(a.unwrap().verdict, Status::Fail);
        // In bfloat16 1e-3 is within the threshold (2^-8).
        let (m, a) = full_of(&b, &c, Some(&r), SMALL_VALUE_BF16);
        assert_eq!(full_failure(&m), None);
        assert_eq!(a.unwrap().verdict, Status::Pass);
    }

    #[test]
    fn tensors_not_near_zero_keep_msprobes_rule() {
        let b = noise(256, 1.0, 0.0);
        let c: Vec<f64> = b.iter().map(|x| -x).collect();
        let (m, a) = full_of(&b, &c, Some(&b), SMALL_VALUE_F32);
        assert_eq!(m.near_zero, Some(false));
        assert!(full_failure(&m).unwrap().contains("cosine"));
        let a = a.unwrap();
        assert!(!a.absolute);
        assert_eq!(a.verdict, Status::Fail);
        // One tiny element among large ones is not a near-zero tensor.
        let mut b2 = noise(256, 1e-11, 0.0);
        b2[0] = 1.0;
        let (m, _) = full_of(&b2, &b2, None, SMALL_VALUE_F32);
        assert_eq!(m.near_zero, Some(false));
    }

    #[test]
    fn statistics_of_a_near_zero_tensor_are_judged_absolutely() {
        let s = SMALL_VALUE_F32;
        let b = record(-1e-11, 1.2e-11, 3e-13, 1e-11 * 27.7, 768);
        let c = record(-1.4e-11, 0.9e-11, -2e-13, 1.3e-11 * 27.7, 768);
        let m = stats(&b, &c, s);
        assert_eq!(m.near_zero, Some(true));
        assert_eq!(stats_failure(&m), None, "{m:?}");
        // At the baseline's RMS scale it would have failed.
        assert!(stat_diff(&b, &c) > STATS_TOLERANCE);
        let drift = record(-1e-11, 2e-3, 3e-6, 2e-3, 768);
        let m = stats(&b, &drift, s);
        assert!(stats_failure(&m).unwrap().contains("near zero"), "{m:?}");
        let r = record(-1e-19, 1e-19, 0.0, 1e-19, 768);
        assert_eq!(stats_arbitration(&b, &c, &r, s).verdict, Status::Pass);
        assert_eq!(stats_arbitration(&b, &drift, &r, s).verdict, Status::Fail);
    }
}
