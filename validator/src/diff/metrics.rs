//! Per-tensor metrics and the rules that judge them (docs/diff.md states the same rules).
//!
//! Full tensors: one pass over both (and the reference's) elements in f64, msprobe's metrics
//! and thresholds. Stats only: the four statistics compared at the baseline's scale.

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
    /// Stats only: the largest statistic difference over the baseline's RMS.
    pub stat_diff: Option<f64>,
}

/// Baseline's and candidate's errors against the fp64 reference, and their ratio.
#[derive(Debug, Clone, Serialize)]
pub struct Arbitration {
    pub baseline_error: f64,
    pub candidate_error: f64,
    pub ratio: f64,
    pub verdict: Status,
}

impl Arbitration {
    /// Judge two errors (already relative to the reference's scale).
    pub fn new(baseline_error: f64, candidate_error: f64) -> Arbitration {
        let ratio = candidate_error.max(ERROR_FLOOR) / baseline_error.max(ERROR_FLOOR);
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
        }
    }
}

#[derive(Default)]
struct Acc {
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
        }
    }

    fn arbitration(&self) -> Arbitration {
        let n = self.ref_n.max(1) as f64;
        let rms = (self.rr / n).sqrt();
        let scale = if rms > 0.0 { rms } else { 1.0 };
        Arbitration::new((self.eb / n).sqrt() / scale, (self.ec / n).sqrt() / scale)
    }
}

/// Full-tensor metrics of baseline `b` and candidate `c` (same element count), and with a
/// reference `r` the arbitration: RMSE of each against `r`, over `r`'s RMS.
pub fn full(b: &Npy, c: &Npy, r: Option<&Npy>) -> (Metrics, Option<Arbitration>) {
    let mut acc = Acc::default();
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

/// Stats-only metrics: each of min, max, mean and l2/√n compared, the difference divided by
/// the baseline's RMS (l2/√n; 1 where that is 0); equal checksums read 0.
pub fn stats(b: &Record, c: &Record) -> Metrics {
    let counts = match (b.nan, b.inf, c.nan, c.inf) {
        (Some(bn), Some(bi), Some(cn), Some(ci)) => Some(bn.abs_diff(cn) + bi.abs_diff(ci)),
        _ => None,
    };
    let same = b.checksum.is_some() && b.checksum == c.checksum;
    Metrics {
        nan_inf_mismatch: counts,
        candidate_non_finite: c.nan.zip(c.inf).map(|(n, i)| n + i),
        stat_diff: Some(if same { 0.0 } else { stat_diff(b, c) }),
        ..Metrics::default()
    }
}

/// The largest of the four statistics' differences, at `b`'s scale.
fn stat_diff(b: &Record, c: &Record) -> f64 {
    let root_n = (b.numel().max(1) as f64).sqrt();
    let rms = b.l2.unwrap_or(0.0) / root_n;
    let scale = if rms > 0.0 { rms } else { 1.0 };
    [
        (b.min, c.min, 1.0),
        (b.max, c.max, 1.0),
        (b.mean, c.mean, 1.0),
        (b.l2, c.l2, root_n),
    ]
    .into_iter()
    .filter_map(|(x, y, div)| Some((y? - x?).abs() / div / scale))
    .fold(0.0, f64::max)
}

/// Stats-only arbitration: each dump's stat difference from the reference's record.
pub fn stats_arbitration(b: &Record, c: &Record, r: &Record) -> Arbitration {
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
    match m.nan_inf_mismatch {
        Some(k) if k > 0 => Some(format!("NaN/Inf counts differ by {k}")),
        _ if d > STATS_TOLERANCE => Some(format!(
            "a statistic differs by {d:.3e} of the baseline's RMS (> {STATS_TOLERANCE})"
        )),
        _ => None,
    }
}
