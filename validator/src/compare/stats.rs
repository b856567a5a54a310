//! The statistics of acceptance across runs: each side's spread, Welch's t-test and the
//! Student-t distribution it needs.
//!
//! The Student-t tail is computed here (regularised incomplete beta by Lentz's continued
//! fraction, ln Γ by Lanczos) rather than taken from the `statrs` crate: it is ~60 lines,
//! exact to ~1e-12 on the degrees of freedom a run family has, and adding `statrs` would bring
//! its dependency tree (nalgebra, rand) into every fresh build for one function.

use serde::Serialize;

/// Mean and spread of one side's final values.
#[derive(Debug, Clone, Serialize)]
pub struct Spread {
    /// How many runs.
    pub n: usize,
    /// Sequential sum / n, as Python's `sum()` computes it.
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator); null with one run.
    pub std: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// Mean without the best and the worst run (MLPerf's reference convergence points); null
    /// with fewer than 3 runs.
    pub olympic_mean: Option<f64>,
}

/// The spread of `xs` (not empty).
pub fn spread(xs: &[f64]) -> Spread {
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let std = (n > 1)
        .then(|| (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt());
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let olympic_mean = (n >= 3).then(|| sorted[1..n - 1].iter().sum::<f64>() / (n - 2) as f64);
    Spread {
        n,
        mean,
        std,
        min: sorted[0],
        max: sorted[n - 1],
        olympic_mean,
    }
}

/// Welch–Satterthwaite degrees of freedom of the difference of two means, from each side's
/// variance of its mean (s²/n) and size. NaN when both variances are 0.
pub fn welch_df(var_mean_a: f64, n_a: usize, var_mean_b: f64, n_b: usize) -> f64 {
    let num = (var_mean_a + var_mean_b).powi(2);
    let den = var_mean_a.powi(2) / (n_a as f64 - 1.0) + var_mean_b.powi(2) / (n_b as f64 - 1.0);
    num / den
}

/// P(T > t) for Student's t with `df` degrees of freedom (the one-sided p-value of `t`).
pub fn student_t_sf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t == f64::INFINITY {
        return 0.0;
    }
    if t == f64::NEG_INFINITY {
        return 1.0;
    }
    // Beyond a million degrees of freedom t is normal to far below any printed digit.
    let df = df.min(1e6);
    let tail = 0.5 * beta_reg(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        tail
    } else {
        1.0 - tail
    }
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms: ~1e-15 relative).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let mut a = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularised incomplete beta function I_x(a, b).
fn beta_reg(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The continued fraction converges fast on this side of the mean; use the symmetry
    // I_x(a, b) = 1 − I_{1−x}(b, a) on the other.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of I_x(a, b), evaluated by the modified Lentz method.
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let fix = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / fix(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=3000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / fix(1.0 + aa * d);
        c = fix(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / fix(1.0 + aa * d);
        c = fix(1.0 + aa / c);
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_matches_closed_forms_and_tables() {
        // Exact: df = 1 is Cauchy, P(T > t) = 1/2 − atan(t)/π; df = 2: 1/2 − t / (2√(t²+2)).
        for t in [0.0, 0.3, 1.0, 2.5, 12.0, -1.7] {
            let cauchy = 0.5 - f64::atan(t) / std::f64::consts::PI;
            assert!((student_t_sf(t, 1.0) - cauchy).abs() < 1e-12, "df 1, t {t}");
            let two = 0.5 - t / (2.0 * (t * t + 2.0).sqrt());
            assert!((student_t_sf(t, 2.0) - two).abs() < 1e-12, "df 2, t {t}");
        }
        // Table values (one-sided critical points, printed to 3 decimals: tolerance 1e-4 in
        // p covers the rounding of t): t(0.95, 5) = 2.015, t(0.95, 10) = 1.812,
        // t(0.975, 10) = 2.228, t(0.99, 20) = 2.528, t(0.95, 1e6) ≈ z = 1.645.
        for (t, df, p) in [
            (2.015, 5.0, 0.05),
            (1.812, 10.0, 0.05),
            (2.228, 10.0, 0.025),
            (2.528, 20.0, 0.01),
            (1.645, 1e6, 0.05),
        ] {
            let got = student_t_sf(t, df);
            assert!((got - p).abs() < 1e-4, "t {t} df {df}: {got} vs {p}");
        }
        // Non-integer df (Welch's) lies between its integer neighbours.
        let (lo, mid, hi) = (
            student_t_sf(2.0, 3.0),
            student_t_sf(2.0, 3.5),
            student_t_sf(2.0, 4.0),
        );
        assert!(hi < mid && mid < lo, "{lo} {mid} {hi}");
        assert_eq!(student_t_sf(f64::INFINITY, 3.0), 0.0);
        assert!(student_t_sf(1.0, f64::NAN).is_nan());
    }

    #[test]
    fn spread_and_welch_df() {
        let s = spread(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!((s.mean - 5.0).abs() < 1e-12);
        // Sample variance 32/7.
        assert!((s.std.unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        assert!((s.olympic_mean.unwrap() - 29.0 / 6.0).abs() < 1e-12);
        let one = spread(&[3.0]);
        assert_eq!((one.std, one.olympic_mean), (None, None));
        // Equal sizes and variances: df = 2(n − 1).
        assert!((welch_df(0.5, 5, 0.5, 5) - 8.0).abs() < 1e-12);
        // One side without variance: df is the other side's n − 1.
        assert!((welch_df(0.0, 3, 0.2, 6) - 5.0).abs() < 1e-12);
        assert!(welch_df(0.0, 3, 0.0, 3).is_nan());
    }
}
