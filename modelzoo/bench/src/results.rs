//! The results over cases × rounds: mean and spread of each figure, scaling efficiency
//! against 1x1 on the same hardware, vendor vs nvidia; as results.md / .json / .csv and an
//! SVG chart of p_whole per case (one axis per throughput unit: images/s and tokens/s are not
//! one scale). A case that ran on the SDAA emulator is marked EMULATOR in every one of them:
//! its figures are this host's CPU, not SDAA hardware.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde::Serialize;

use crate::finished::FinishedInfo;
use crate::key::CaseKey;
use crate::round::RoundResult;

/// Mean and spread of one figure over a case's good rounds.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Stat {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (0 for one round).
    pub std: f64,
    pub min: f64,
    pub max: f64,
}

impl Stat {
    pub fn of(values: &[f64]) -> Option<Stat> {
        let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Some(Stat {
            n,
            mean,
            std: var.sqrt(),
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// `mean ± std`, with `digits` decimals.
    fn show(&self, digits: usize) -> String {
        if self.n > 1 {
            format!("{:.digits$} ± {:.digits$}", self.mean, self.std)
        } else {
            format!("{:.digits$}", self.mean)
        }
    }
}

/// How a figure is read from a round's finished_info.
pub type Figure = fn(&FinishedInfo) -> Option<f64>;

/// The figures aggregated per case, by name.
pub const FIGURES: [(&str, Figure); 12] = [
    ("e2e_time", |i| Some(i.e2e_time)),
    ("init_time", |i| Some(i.init_time)),
    ("raw_train_time", |i| Some(i.raw_train_time)),
    ("p_whole", |i| Some(i.p_whole)),
    ("p_train", |i| Some(i.p_train)),
    ("p_core", |i| Some(i.p_core)),
    ("final_accuracy", |i| i.final_accuracy),
    ("final_loss", |i| i.final_loss),
    ("mem_used", |i| i.mem_used),
    ("mem_total", |i| i.mem_total),
    ("mfu", |i| i.mfu),
    ("converged", |i| Some(if i.converged { 1.0 } else { 0.0 })),
];

/// One case: its rounds and their statistics.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub key: String,
    pub case: String,
    pub model: String,
    pub framework: String,
    pub hardware: String,
    pub vendor: String,
    pub nnodes: usize,
    pub nproc: usize,
    pub items_unit: String,
    /// A round of it ran on the SDAA emulator: not an SDAA hardware figure.
    pub emulated: bool,
    pub rounds: Vec<RoundResult>,
    /// Figure name → statistics over the rounds that succeeded.
    pub stats: Vec<(String, Stat)>,
    /// p_whole / (world size × p_whole of 1x1 on the same hardware), when that case ran.
    pub scaling_efficiency: Option<f64>,
    /// p_whole / p_whole of the same model and scale on an nvidia hardware, per hardware.
    pub vs_nvidia: Vec<(String, f64)>,
}

impl CaseResult {
    pub fn new(key: &CaseKey, vendor: &str, items_unit: &str, rounds: Vec<RoundResult>) -> Self {
        let infos: Vec<&FinishedInfo> = rounds.iter().filter_map(|r| r.info.as_ref()).collect();
        let stats = FIGURES
            .iter()
            .filter_map(|(name, get)| {
                let values: Vec<f64> = infos.iter().filter_map(|i| get(i)).collect();
                Stat::of(&values).map(|s| (name.to_string(), s))
            })
            .collect();
        CaseResult {
            key: key.to_string(),
            case: key.case_name(),
            model: key.model.clone(),
            framework: key.framework.clone(),
            hardware: key.hardware.clone(),
            vendor: vendor.to_string(),
            nnodes: key.nnodes,
            nproc: key.nproc,
            items_unit: items_unit.to_string(),
            emulated: rounds.iter().any(|r| r.emulated),
            rounds,
            stats,
            scaling_efficiency: None,
            vs_nvidia: Vec::new(),
        }
    }

    /// The case's name as every output shows it: `… (EMULATOR)` when it ran on the emulator.
    pub fn label(&self) -> String {
        if self.emulated {
            format!("{} (EMULATOR)", self.case)
        } else {
            self.case.clone()
        }
    }

    pub fn stat(&self, name: &str) -> Option<&Stat> {
        self.stats.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    pub fn failed_rounds(&self) -> usize {
        self.rounds.iter().filter(|r| r.info.is_none()).count()
    }
}

/// Fill in scaling efficiency and the vendor-vs-nvidia ratios across `cases`.
pub fn compare_cases(cases: &mut [CaseResult]) {
    struct Row {
        model: String,
        framework: String,
        hardware: String,
        vendor: String,
        shape: (usize, usize),
        p_whole: Option<f64>,
    }
    let p = |c: &CaseResult| c.stat("p_whole").map(|s| s.mean);
    let rows: Vec<Row> = cases
        .iter()
        .map(|c| Row {
            model: c.model.clone(),
            framework: c.framework.clone(),
            hardware: c.hardware.clone(),
            vendor: c.vendor.clone(),
            shape: (c.nnodes, c.nproc),
            p_whole: p(c),
        })
        .collect();
    for c in cases.iter_mut() {
        let Some(mine) = p(c) else { continue };
        let same_model = |r: &&Row| r.model == c.model && r.framework == c.framework;
        let world = c.nnodes * c.nproc;
        if world > 1 {
            c.scaling_efficiency = rows
                .iter()
                .filter(same_model)
                .find(|r| r.hardware == c.hardware && r.shape == (1, 1))
                .and_then(|r| r.p_whole)
                .map(|one| mine / (world as f64 * one));
        }
        if c.vendor != "nvidia" {
            c.vs_nvidia = rows
                .iter()
                .filter(same_model)
                .filter(|r| r.vendor == "nvidia" && r.shape == (c.nnodes, c.nproc))
                .filter_map(|r| r.p_whole.map(|theirs| (r.hardware.clone(), mine / theirs)))
                .collect();
        }
    }
}

/// Everything results.json holds.
#[derive(Debug, Serialize)]
pub struct Results<'a> {
    pub command: &'a str,
    pub cases: &'a [CaseResult],
    /// Seconds the bench spent besides the runs, and that as % of the runs' e2e_time.
    pub bench_overhead_secs: f64,
    pub bench_overhead_pct: f64,
}

fn cell(s: Option<&Stat>, digits: usize) -> String {
    s.map_or("–".into(), |s| s.show(digits))
}

fn gib(s: Option<&Stat>) -> Option<f64> {
    s.map(|s| s.mean / (1u64 << 30) as f64)
}

/// results.md: one row per case (FlagPerf's README table), then failed rounds with their log
/// tails.
pub fn markdown(r: &Results<'_>) -> String {
    let mut md = String::from("# modelzoo bench results\n\n");
    md.push_str(&format!("`{}`\n\n", r.command));
    md.push_str("| case | rounds ok | p_whole | p_train | p_core | e2e_time (s) | init_time (s) | final acc / loss | converged | mem used / total (GiB) | MFU (%) | scaling eff. | vs nvidia |\n");
    md.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for c in r.cases {
        let unit = format!(" {}/s", c.items_unit);
        let acc = c
            .stat("final_accuracy")
            .map(|s| s.show(2))
            .or_else(|| c.stat("final_loss").map(|s| s.show(4)))
            .unwrap_or("–".into());
        let converged = c.stat("converged").map_or("–".into(), |s| {
            format!("{}/{}", (s.mean * s.n as f64).round(), s.n)
        });
        let mem = match (gib(c.stat("mem_used")), gib(c.stat("mem_total"))) {
            (Some(u), Some(t)) => format!("{u:.2} / {t:.1}"),
            (Some(u), None) => format!("{u:.2}"),
            _ => "–".into(),
        };
        let vs = c
            .vs_nvidia
            .iter()
            .map(|(h, x)| format!("{x:.2}× {h}"))
            .collect::<Vec<_>>()
            .join(", ");
        md.push_str(&format!(
            "| {} | {}/{} | {}{unit} | {}{unit} | {}{unit} | {} | {} | {acc} | {converged} | {mem} | {} | {} | {} |\n",
            c.label(),
            c.rounds.len() - c.failed_rounds(),
            c.rounds.len(),
            cell(c.stat("p_whole"), 1),
            cell(c.stat("p_train"), 1),
            cell(c.stat("p_core"), 1),
            cell(c.stat("e2e_time"), 2),
            cell(c.stat("init_time"), 2),
            cell(c.stat("mfu"), 2),
            c.scaling_efficiency.map_or("–".into(), |e| format!("{:.1} %", e * 100.0)),
            if vs.is_empty() { "–".into() } else { vs },
        ));
    }
    md.push_str(&format!(
        "\nValues are mean ± sample standard deviation over the rounds that succeeded. p_whole = items / e2e_time, p_train excludes evaluation, p_core also excludes data IO; scaling efficiency = p_whole / (world size × p_whole of 1x1 on the same hardware). Bench overhead: {:.2} s, {:.2} % of the runs' e2e_time. Field meanings: docs/bench.md.\n",
        r.bench_overhead_secs, r.bench_overhead_pct
    ));
    let emulated: Vec<&str> = r
        .cases
        .iter()
        .filter(|c| c.emulated)
        .map(|c| c.case.as_str())
        .collect();
    if !emulated.is_empty() {
        md.push_str(&format!(
            "\n**EMULATOR**: {} ran on the SDAA emulator — every op on this host's CPU. Their figures (and their ratios to nvidia) measure the emulator, not SDAA hardware.\n",
            emulated.join(", ")
        ));
    }
    let peaks: Vec<String> = r
        .cases
        .iter()
        .filter_map(|c| {
            let i = c.rounds.iter().find_map(|r| r.info.as_ref())?;
            match (&i.mfu_peak, &i.mfu_refused) {
                (_, Some(why)) => Some(format!("- {}: MFU refused: {why}", c.label())),
                (Some(p), None) => Some(format!(
                    "- {}: MFU against {:.4e} FLOP/s per device, {}",
                    c.label(),
                    p.flops,
                    p.source
                )),
                _ => None,
            }
        })
        .collect();
    if !peaks.is_empty() {
        md.push_str("\n## MFU\n\n");
        md.push_str(&peaks.join("\n"));
        md.push('\n');
    }
    let failed: Vec<&RoundResult> = r
        .cases
        .iter()
        .flat_map(|c| c.rounds.iter())
        .filter(|x| x.info.is_none())
        .collect();
    if !failed.is_empty() {
        md.push_str("\n## Failed rounds\n");
        for f in failed {
            md.push_str(&format!(
                "\n### {} — {}\n\n```\n{}\n```\n",
                f.dir.display(),
                f.error.as_deref().unwrap_or("failed"),
                f.log_tail.as_deref().unwrap_or("")
            ));
        }
    }
    md
}

/// The columns of results.csv, one row per case × round; `emulated` is `EMULATOR` for a
/// round on the SDAA emulator (last, so the other columns keep their places).
const CSV_COLUMNS: [&str; 23] = [
    "case",
    "round",
    "status",
    "error",
    "world_size",
    "precision",
    "global_batch",
    "e2e_time",
    "init_time",
    "raw_train_time",
    "eval_time",
    "data_time",
    "items",
    "items_unit",
    "p_whole",
    "p_train",
    "p_core",
    "converged",
    "final_accuracy",
    "final_loss",
    "mem_used",
    "mfu",
    "emulated",
];

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn emulator(emulated: bool) -> String {
    if emulated { "EMULATOR" } else { "" }.to_string()
}

/// results.csv.
pub fn csv(cases: &[CaseResult]) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    for c in cases {
        for r in &c.rounds {
            let row: Vec<String> = match &r.info {
                Some(i) => vec![
                    c.case.clone(),
                    r.round.to_string(),
                    "ok".into(),
                    String::new(),
                    i.world_size.to_string(),
                    i.precision.clone(),
                    opt(i.global_batch),
                    i.e2e_time.to_string(),
                    i.init_time.to_string(),
                    i.raw_train_time.to_string(),
                    i.eval_time.to_string(),
                    i.data_time.to_string(),
                    i.items.to_string(),
                    i.items_unit.clone(),
                    i.p_whole.to_string(),
                    i.p_train.to_string(),
                    i.p_core.to_string(),
                    i.converged.to_string(),
                    opt(i.final_accuracy),
                    opt(i.final_loss),
                    opt(i.mem_used),
                    opt(i.mfu),
                    emulator(r.emulated),
                ],
                None => {
                    let mut row = vec![
                        c.case.clone(),
                        r.round.to_string(),
                        "failed".into(),
                        r.error.clone().unwrap_or_default(),
                    ];
                    row.resize(CSV_COLUMNS.len() - 1, String::new());
                    row.push(emulator(r.emulated));
                    row
                }
            };
            out.push_str(
                &row.iter()
                    .map(|s| csv_field(s))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            out.push('\n');
        }
    }
    out
}

/// p_whole per case as horizontal bars (mean, with min–max whiskers), one panel and x axis
/// per throughput unit — images/s and tokens/s differ by orders of magnitude and are not one
/// scale. Emulated cases are drawn hatched-grey and labelled `(EMULATOR)`.
pub fn p_whole_svg(cases: &[CaseResult]) -> Result<String, Box<dyn std::error::Error>> {
    let mut units: Vec<&str> = Vec::new();
    for c in cases {
        if c.stat("p_whole").is_some() && !units.contains(&c.items_unit.as_str()) {
            units.push(&c.items_unit);
        }
    }
    let bars_of = |unit: &str| -> Vec<Bar> {
        cases
            .iter()
            .filter(|c| c.items_unit == unit)
            .filter_map(|c| c.stat("p_whole").map(|s| (c.label(), *s, c.emulated)))
            .collect()
    };
    let panels: Vec<(&str, Vec<Bar>)> = units.iter().map(|u| (*u, bars_of(u))).collect();
    let height_of = |n: usize| 100 + 40 * n.max(1) as u32;
    let total: u32 = panels
        .iter()
        .map(|(_, b)| height_of(b.len()))
        .sum::<u32>()
        .max(height_of(0));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, total)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut rest = root.clone();
        for (unit, bars) in &panels {
            let (area, below) = rest.split_vertically(height_of(bars.len()));
            draw_panel(&area, unit, bars)?;
            rest = below;
        }
        if panels.is_empty() {
            root.draw(&Text::new(
                "no round succeeded: no p_whole to draw",
                (20, 40),
                ("sans-serif", 16).into_font(),
            ))?;
        }
        root.present()?;
    }
    Ok(svg)
}

type Panel<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// One bar of p_whole.svg: the case's label, its p_whole, whether it ran on the emulator.
type Bar = (String, Stat, bool);

/// One unit's bars on its own x axis.
fn draw_panel(
    area: &Panel<'_>,
    unit: &str,
    bars: &[Bar],
) -> Result<(), Box<dyn std::error::Error>> {
    let hi = bars
        .iter()
        .map(|b| b.1.max)
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.1;
    let n = bars.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("p_whole per case, {unit}/s (mean of rounds; whiskers min–max)"),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(10)
        .build_cartesian_2d(0f64..hi, 0f64..n)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc(format!("{unit}/s"))
        .draw()?;
    let blue = RGBColor(31, 119, 180);
    let grey = RGBColor(150, 150, 150);
    chart.draw_series(bars.iter().enumerate().map(|(i, (_, s, emulated))| {
        let y = i as f64;
        let color = if *emulated { grey } else { blue };
        Rectangle::new([(0.0, y + 0.2), (s.mean, y + 0.8)], color.filled())
    }))?;
    // Emulated bars hatched, so the mark survives a grey-scale print.
    chart.draw_series(bars.iter().enumerate().filter(|(_, b)| b.2).flat_map(
        |(i, (_, s, _))| {
            let y = i as f64;
            (1..8).map(move |k| {
                let x = s.mean * k as f64 / 8.0;
                PathElement::new(
                    vec![(x, y + 0.2), (x + s.mean / 16.0, y + 0.8)],
                    WHITE.stroke_width(2),
                )
            })
        },
    ))?;
    chart.draw_series(bars.iter().enumerate().map(|(i, (_, s, _))| {
        let y = i as f64 + 0.5;
        PathElement::new(vec![(s.min, y), (s.max, y)], BLACK.stroke_width(2))
    }))?;
    // Each case's name over its bar, with the mean.
    chart.draw_series(bars.iter().enumerate().map(|(i, (name, s, _))| {
        Text::new(
            format!("{name}: {:.1}", s.mean),
            (hi * 0.01, i as f64 + 0.95),
            ("sans-serif", 14).into_font(),
        )
    }))?;
    Ok(())
}

/// Write results.md, results.json, results.csv and p_whole.svg into `dir` (atomically).
pub fn write_all(dir: &Path, r: &Results<'_>) -> std::io::Result<Vec<PathBuf>> {
    let json = serde_json::to_string_pretty(r).map_err(std::io::Error::other)?;
    let svg = p_whole_svg(r.cases).map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut written = Vec::new();
    for (name, text) in [
        ("results.md", markdown(r)),
        ("results.json", json),
        ("results.csv", csv(r.cases)),
        ("p_whole.svg", svg),
    ] {
        written.push(validator::report::write_atomic(dir, name, text.as_bytes())?);
    }
    Ok(written)
}
