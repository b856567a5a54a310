//! The plots of `modelzoo compare --report-dir`: `curves.svg` (both series, raw and smoothed)
//! and `rel_error.svg` (the per-step relative error with the rule's band), drawn with plotters
//! on a y axis that is always finite (issue #38 C10).

use plotters::prelude::*;

use super::{Comparison, Rule};

/// Most points drawn per line; longer series are thinned by even striding (every point still
/// counts in the figures — only the drawing is thinned).
pub const MAX_PLOT_POINTS: usize = 2000;

/// The smoothed curve is an exponential moving average with alpha = 2 / (span + 1), span =
/// max(5, steps / 50).
pub fn ema_span(steps: usize) -> usize {
    (steps / 50).max(5)
}

/// Exponential moving average of `values` with the span above.
pub fn ema(values: &[f64]) -> Vec<f64> {
    let alpha = 2.0 / (ema_span(values.len()) as f64 + 1.0);
    let mut out = Vec::with_capacity(values.len());
    let mut acc = None;
    for &v in values {
        let next = match acc {
            None => v,
            Some(a) => ema_step(a, v, alpha),
        };
        acc = Some(next);
        out.push(next);
    }
    out
}

/// One EMA step from `a` towards `v`; when `v - a` overflows (values near ±f64::MAX), the
/// same average computed without the difference, so extreme values still give a curve.
fn ema_step(a: f64, v: f64, alpha: f64) -> f64 {
    let d = v - a;
    if d.is_finite() {
        a + alpha * d
    } else {
        a * (1.0 - alpha) + v * alpha
    }
}

/// The y axis of a plot: a finite range plotters can put ticks on, and a power of ten the
/// values are divided by. Plotters' tick search loops forever when the range's width is
/// infinite (values spanning ±9e307) or its tick step underflows to 0 (denormals): issue #38
/// C10. Values of magnitude 1e-30..1e30 are drawn as they are; others are scaled to about 1
/// and the axis title says `(×1eN)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct YAxis {
    /// The range drawn, in scaled units: finite, `lo < hi`, `hi - lo` finite.
    pub lo: f64,
    pub hi: f64,
    /// Values are divided by 10^exp.
    pub exp: i32,
}

impl YAxis {
    /// The axis over the finite values of `values` (non-finite ones are not drawn); `None`
    /// when there is none.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<YAxis> {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.into_iter().filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !(lo.is_finite() && hi.is_finite()) {
            return None;
        }
        let m = lo.abs().max(hi.abs());
        let exp = if m == 0.0 || (1e-30..=1e30).contains(&m) {
            0
        } else {
            m.log10().floor() as i32
        };
        let mut axis = YAxis {
            lo: 0.0,
            hi: 0.0,
            exp,
        };
        let (lo, hi) = (axis.y(lo), axis.y(hi));
        let pad = ((hi - lo) * 0.05).max(hi.abs().max(1e-12) * 1e-6);
        (axis.lo, axis.hi) = (lo - pad, hi + pad);
        Some(axis)
    }

    /// `v` in the axis' units (divided by 10^exp, in two steps so that neither factor
    /// overflows or underflows).
    pub fn y(&self, v: f64) -> f64 {
        if self.exp == 0 {
            return v;
        }
        let half = self.exp / 2;
        v * 10f64.powi(-half) * 10f64.powi(-(self.exp - half))
    }

    /// The axis title: `desc`, with the scale when the values are scaled.
    pub fn desc(&self, desc: &str) -> String {
        if self.exp == 0 {
            desc.to_string()
        } else {
            format!("{desc} (×1e{})", self.exp)
        }
    }

    /// `points` in the axis' units, the non-finite ones left out.
    pub fn scaled(&self, points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
        points
            .into_iter()
            .map(|(x, v)| (x, self.y(v)))
            .filter(|(_, v)| v.is_finite())
            .collect()
    }
}

fn stride(n: usize) -> usize {
    n.div_ceil(MAX_PLOT_POINTS).max(1)
}

/// The points drawn of a series of `n` values and of its EMA, in one pass over `values`
/// (so drawing holds at most [`MAX_PLOT_POINTS`] points per line, never a copy of the
/// series): every `stride(n)`-th value and the last, non-finite ones left out.
fn thinned_with_ema(values: impl Iterator<Item = f64>, n: usize) -> [Vec<(f64, f64)>; 2] {
    let s = stride(n);
    let alpha = 2.0 / (ema_span(n) as f64 + 1.0);
    let (mut raw, mut smooth) = (Vec::new(), Vec::new());
    let mut acc: Option<f64> = None;
    for (i, v) in values.enumerate() {
        let e = match acc {
            None => v,
            Some(a) => ema_step(a, v, alpha),
        };
        acc = Some(e);
        if i % s == 0 || i + 1 == n {
            raw.push((i as f64, v));
            smooth.push((i as f64, e));
        }
    }
    raw.retain(|(_, v)| v.is_finite());
    smooth.retain(|(_, v)| v.is_finite());
    [raw, smooth]
}

type DrawResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Both curves, raw (thin) and smoothed (thick).
pub fn curves_svg(cmp: &Comparison) -> DrawResult<String> {
    let n = cmp.pairs.len();
    let [b_raw, b_ema] = thinned_with_ema(cmp.pairs.baseline().iter().copied(), n);
    let [c_raw, c_ema] = thinned_with_ema(cmp.pairs.candidate().iter().copied(), n);
    let lines = [
        (b_raw, RGBColor(31, 119, 180).mix(0.35), 1, "baseline (raw)"),
        (c_raw, RGBColor(214, 39, 40).mix(0.35), 1, "candidate (raw)"),
        (b_ema, RGBColor(31, 119, 180).to_rgba(), 2, "baseline (EMA)"),
        (c_ema, RGBColor(214, 39, 40).to_rgba(), 2, "candidate (EMA)"),
    ];
    let axis = YAxis::of(lines.iter().flat_map(|l| l.0.iter().map(|p| p.1))).unwrap_or(YAxis {
        lo: 0.0,
        hi: 1.0,
        exp: 0,
    });
    let n = cmp.pairs.len().max(2) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 480)).into_drawing_area();
        let caption = format!("{}: baseline vs candidate", cmp.metric);
        let mut chart = step_chart(
            &root,
            &caption,
            n,
            (axis.lo, axis.hi),
            &axis.desc(&cmp.metric),
        )?;
        for (pts, color, width, label) in lines {
            chart
                .draw_series(LineSeries::new(axis.scaled(pts), color.stroke_width(width)))?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// A white chart over `n` paired steps with the mesh and axis labels both plots share.
fn step_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    n: f64,
    (lo, hi): (f64, f64),
    y_desc: &str,
) -> DrawResult<
    ChartContext<
        'a,
        SVGBackend<'b>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
> {
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..(n - 1.0), lo..hi)?;
    chart
        .configure_mesh()
        .x_desc("paired step")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc(y_desc)
        .draw()?;
    Ok(chart)
}

/// Per-step relative error (c−b)/b in percent, with the ±threshold band for rel1.
pub fn rel_error_svg(cmp: &Comparison) -> DrawResult<String> {
    let [pts, smooth] =
        thinned_with_ema(cmp.pairs.iter().map(|p| p.rel() * 100.0), cmp.pairs.len());
    let band = match cmp.verdict.rule {
        Rule::Rel1 { threshold } => Some(threshold * 100.0),
        Rule::ModelzooLoss => None,
    };
    // The ±threshold band is always in view (±1.1 × threshold).
    let band_edges = band.map(|t| [-t * 1.1, t * 1.1]).into_iter().flatten();
    let axis =
        YAxis::of(pts.iter().chain(&smooth).map(|p| p.1).chain(band_edges)).unwrap_or(YAxis {
            lo: 0.0,
            hi: 1.0,
            exp: 0,
        });
    let n = cmp.pairs.len().max(2) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 360)).into_drawing_area();
        let caption = "relative error per step (candidate − baseline) / baseline";
        let mut chart = step_chart(
            &root,
            caption,
            n,
            (axis.lo, axis.hi),
            &axis.desc("relative error (%)"),
        )?;
        let grey = RGBColor(90, 90, 90);
        chart
            .draw_series(LineSeries::new(
                axis.scaled(pts),
                grey.mix(0.5).stroke_width(1),
            ))?
            .label("per step")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(2))
            });
        let green = RGBColor(44, 160, 44);
        chart
            .draw_series(LineSeries::new(axis.scaled(smooth), green.stroke_width(2)))?
            .label("EMA")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], green.stroke_width(2))
            });
        if let Some(t) = band {
            for y in [axis.y(t), axis.y(-t)] {
                chart.draw_series(LineSeries::new(
                    vec![(0.0, y), (n - 1.0, y)],
                    RED.stroke_width(1),
                ))?;
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::fmt::Write as _;
    use std::fs;
    use std::path::Path;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Value sets that made plotters' tick search loop forever or sit at the edge of f64
    /// (issue #38 C10), NaN and infinities mixed in.
    pub(crate) const EXTREMES: &[&[f64]] = &[
        &[9e307, -9e307, 1e308, -1e308, 1.0],
        &[f64::MAX, -f64::MAX, 0.0],
        &[5e-324, 1e-323, 2.5e-320],
        &[-5e-324, 5e-324],
        &[f64::MIN_POSITIVE, -f64::MIN_POSITIVE],
        &[3.0, 3.0, 3.0, 3.0],
        &[7.5],
        &[0.0, 0.0],
        &[1e300, 1.000_000_000_000_001e300],
        &[
            9e307,
            f64::NAN,
            -9e307,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e308,
        ],
    ];

    /// `f()` in a thread; the test fails (instead of hanging) past `limit`.
    pub(crate) fn within<T: Send + 'static>(
        limit: Duration,
        what: String,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(limit)
            .unwrap_or_else(|_| panic!("{what}: did not return within {limit:?}"))
    }

    /// A tcap stdout log of `values` as `train.loss` (rank 0), non-finite ones as Python
    /// prints them.
    pub(crate) fn tcap_log(path: &Path, values: &[f64]) {
        let mut s = String::new();
        for (i, v) in values.iter().enumerate() {
            let shown = match *v {
                v if v.is_nan() => "nan".to_string(),
                v if v.is_infinite() => if v > 0.0 { "inf" } else { "-inf" }.to_string(),
                v => format!("{v:e}"),
            };
            writeln!(
                s,
                "TCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: 0 Iteration: {i}  rank : 0  train.loss : {shown}  train.ips : 10.0 imgs/s"
            )
            .unwrap();
        }
        fs::write(path, s).unwrap();
    }

    #[test]
    fn the_y_axis_of_any_finite_values_is_drawable() {
        for values in EXTREMES {
            let axis = YAxis::of(values.iter().copied()).unwrap();
            assert!(
                axis.lo.is_finite() && axis.hi.is_finite(),
                "{values:?}: {axis:?}"
            );
            assert!(
                axis.lo < axis.hi && (axis.hi - axis.lo).is_finite(),
                "{values:?}: {axis:?}"
            );
            // Ticks are a power of ten below the width: never 0 or infinite.
            let step = 10f64.powf((axis.hi - axis.lo).log10().floor());
            assert!(step > 0.0 && step.is_finite(), "{values:?}: {axis:?}");
            for v in values.iter().filter(|v| v.is_finite()) {
                let y = axis.y(*v);
                assert!(axis.lo <= y && y <= axis.hi, "{v} → {y} outside {axis:?}");
            }
        }
        // Ordinary values are drawn as they are.
        let axis = YAxis::of([2.5, 0.1]).unwrap();
        assert_eq!(axis.exp, 0);
        assert_eq!(axis.desc("loss"), "loss");
        let axis = YAxis::of([9e307, -1e308]).unwrap();
        assert_eq!(axis.exp, 308);
        assert_eq!(axis.desc("loss"), "loss (×1e308)");
        assert!((axis.y(-1e308) + 1.0).abs() < 1e-9, "{}", axis.y(-1e308));
        assert_eq!(YAxis::of([f64::NAN, f64::INFINITY]), None);
    }
}
