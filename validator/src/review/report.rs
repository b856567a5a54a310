//! The reviewer's report of `modelzoo validate --md FILE` / `--html FILE`: the models by
//! severity (errors first), each finding with its file:line, rule and fix, the rules that fired
//! most, and a loss-curve picture (SVG, inline) of every CUDA/SDAA pair the review compared.
//! Both files are self-contained (no scripts, no network) and written atomically.

use std::collections::BTreeMap;
use std::path::Path;

use modelzoo_support::markdown as md;
use plotters::prelude::*;

use crate::compare::plot::{YAxis, MAX_PLOT_POINTS};
use crate::finding::{DirReport, LossPair, PairSource};
use crate::render::{location, summarize};
use crate::rules::Severity;

/// Reports in reading order: the worst severity first, then more violations first, then path.
fn ordered(reports: &[DirReport]) -> Vec<&DirReport> {
    let mut v: Vec<&DirReport> = reports.iter().collect();
    let rank = |r: &DirReport| r.worst().map(|s| s as u8).unwrap_or(3);
    v.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then(b.findings.len().cmp(&a.findings.len()))
            .then(a.dir.cmp(&b.dir))
    });
    v
}

/// (rule, severity) → count, most frequent first.
fn by_rule(reports: &[DirReport]) -> Vec<(&'static str, Severity, usize)> {
    let mut m: BTreeMap<&'static str, (Severity, usize)> = BTreeMap::new();
    for f in reports.iter().flat_map(|r| &r.findings) {
        m.entry(f.rule).or_insert((f.severity(), 0)).1 += 1;
    }
    let mut v: Vec<_> = m.into_iter().map(|(r, (s, n))| (r, s, n)).collect();
    v.sort_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)).then(a.0.cmp(b.0)));
    v
}

fn counts(r: &DirReport) -> String {
    let n = |s: Severity| r.findings.iter().filter(|f| f.severity() == s).count();
    let parts: Vec<String> = [Severity::Error, Severity::Warning, Severity::Info]
        .into_iter()
        .filter(|s| n(*s) > 0)
        .map(|s| {
            let plural = if n(s) == 1 || s == Severity::Info {
                ""
            } else {
                "s"
            };
            format!("{} {s}{plural}", n(s))
        })
        .collect();
    if parts.is_empty() {
        "clean".into()
    } else {
        parts.join(", ")
    }
}

/// A pair's files, for a caption.
fn pair_name(p: &LossPair) -> String {
    match &p.source {
        PairSource::Logs { cuda, sdaa } => {
            format!("{} vs {}", cuda.display(), sdaa.display())
        }
        PairSource::Combined { file } => file.display().to_string(),
    }
}

fn pair_figures(p: &LossPair) -> String {
    format!(
        "{} steps (CUDA {}, SDAA {} values, read by {}): MeanRelativeError {:.6}, MeanAbsoluteError {:.6} — {} under the ModelZoo rule",
        p.steps,
        p.cuda_values,
        p.sdaa_values,
        super::logs::read_by(p.read_as),
        p.mean_relative_error,
        p.mean_absolute_error,
        if p.pass { "pass" } else { "fail" }
    )
}

/// The loss curves of a pair as SVG (CUDA blue, SDAA red), or why it cannot be drawn.
pub fn loss_svg(p: &LossPair) -> Result<String, String> {
    let (cuda, sdaa) = p
        .values()
        .ok_or_else(|| "the logs cannot be read again".to_string())?;
    if cuda.is_empty() {
        return Err("no values to draw".into());
    }
    let stride = cuda.len().div_ceil(MAX_PLOT_POINTS).max(1);
    let pts = |v: &[f64]| -> Vec<(f64, f64)> {
        v.iter()
            .enumerate()
            .step_by(stride)
            .filter(|(_, y)| y.is_finite())
            .map(|(i, y)| (i as f64, *y))
            .collect()
    };
    let (c, s) = (pts(&cuda), pts(&sdaa));
    // Any finite values, ±9e307 and denormals included, give an axis plotters can draw.
    let axis = YAxis::of(c.iter().chain(&s).map(|p| p.1))
        .ok_or_else(|| "no finite values to draw".to_string())?;
    let (c, s) = (axis.scaled(c), axis.scaled(s));
    let n = (cuda.len().max(2) - 1) as f64;
    let mut svg = String::new();
    let draw = |svg: &mut String| -> Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::with_string(svg, (760, 320)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("loss: CUDA vs SDAA", ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n, axis.lo..axis.hi)?;
        chart
            .configure_mesh()
            .x_desc("step")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc(axis.desc("loss"))
            .draw()?;
        let blue = RGBColor(31, 119, 180);
        let red = RGBColor(214, 39, 40);
        chart
            .draw_series(LineSeries::new(c, blue.stroke_width(2)))?
            .label("CUDA")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2))
            });
        chart
            .draw_series(LineSeries::new(s, red.stroke_width(2)))?
            .label("SDAA")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(2)));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw(&mut svg).map_err(|e| format!("cannot draw: {e}"))?;
    Ok(svg)
}

/// Standard base64 (with padding), for the Markdown report's `data:` images.
fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(T[(n >> 18) as usize & 63] as char);
        out.push(T[(n >> 12) as usize & 63] as char);
        out.push(if chunk.len() > 1 {
            T[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if chunk.len() > 2 {
            T[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

/// `1 warning`, `2 warnings`: a count with its noun in the right number.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The command line as a report shows it: the program by its name, not the reviewer's install
/// path, and every absolute path under the current directory relative to it (`--md=/home/me/
/// zoo/r.md` → `--md=r.md`), so a report pasted into a PR does not carry the reviewer's
/// machine layout.
pub fn shown_command(command: &str) -> String {
    let cwd = std::env::current_dir().ok();
    let shown = |word: &str| -> String {
        let p = Path::new(word);
        match cwd.as_deref().and_then(|c| p.strip_prefix(c).ok()) {
            Some(rel) if p.is_absolute() && rel.as_os_str().is_empty() => ".".into(),
            Some(rel) if p.is_absolute() => rel.display().to_string(),
            _ => word.to_string(),
        }
    };
    command
        .split(' ')
        .enumerate()
        .map(|(i, word)| {
            if i == 0 {
                return Path::new(word)
                    .file_name()
                    .map_or(word.to_string(), |n| n.to_string_lossy().into_owned());
            }
            match word.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => format!("{flag}={}", shown(value)),
                _ => shown(word),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The Markdown report. Every name and text it did not write itself — the command line,
/// directory and file names, finding messages — is escaped ([`modelzoo_support::markdown`]):
/// a backtick in a file name cannot end its code span, a `|` cannot split a table cell.
pub fn markdown(reports: &[DirReport], command: &str) -> String {
    let sum = summarize(reports);
    let mut s = String::from("# modelzoo validate: review\n\n");
    s.push_str(&md::code_block(&shown_command(command)));
    s.push('\n');
    s.push_str(&format!(
        "{} checked: {} clean, {} with violations — {}, {}, {} info.\n\n",
        count(sum.dirs, "directory", "directories"),
        sum.clean,
        sum.with_violations,
        count(sum.errors, "error", "errors"),
        count(sum.warnings, "warning", "warnings"),
        sum.infos
    ));
    s.push_str("Severity: **error** — the model cannot run as submitted, or a claim it makes is false; **warning** — likely wrong, a reviewer would send it back; **info** — worth knowing.\n\n");
    let rules = by_rule(reports);
    if !rules.is_empty() {
        s.push_str("| rule | severity | findings |\n|---|---|---|\n");
        for (r, sev, n) in rules {
            s.push_str(&format!("| {} | {sev} | {n} |\n", md::code_cell(r)));
        }
        s.push('\n');
    }
    for r in ordered(reports) {
        s.push_str(&format!(
            "## {} — {}\n\n",
            md::text(&r.dir.display().to_string()),
            counts(r)
        ));
        if !r.findings.is_empty() {
            s.push_str("| severity | where | rule | finding and fix |\n|---|---|---|---|\n");
            let mut fs: Vec<_> = r.findings.iter().collect();
            fs.sort_by_key(|f| f.severity());
            for f in fs {
                s.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    f.severity(),
                    md::code_cell(&location(f)),
                    md::code_cell(f.rule),
                    md::text(&f.message)
                ));
            }
            s.push('\n');
        }
        for p in &r.compared {
            s.push_str(&format!(
                "**Compared** {}: {}\n\n",
                md::code(&pair_name(p)),
                md::text(&pair_figures(p))
            ));
            match loss_svg(p) {
                Ok(svg) => s.push_str(&format!(
                    "![loss curves: {}](data:image/svg+xml;base64,{})\n\n",
                    md::text(&pair_name(p)),
                    base64(svg.as_bytes())
                )),
                Err(e) => s.push_str(&format!("(no picture: {})\n\n", md::text(&e))),
            }
        }
    }
    s
}

/// The HTML report (one file: styles and SVG inline).
pub fn html(reports: &[DirReport], command: &str) -> String {
    let sum = summarize(reports);
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>modelzoo validate: review</title>\n<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse;margin-bottom:1em}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}.error{color:#cf222e;font-weight:bold}.warning{color:#9a6700;font-weight:bold}.info{color:#0969da}pre{background:#f6f8fa;padding:8px;overflow-x:auto}code{word-break:break-all}</style></head><body>\n",
    );
    s.push_str("<h1>modelzoo validate: review</h1>\n");
    s.push_str(&format!("<pre>{}</pre>\n", esc(&shown_command(command))));
    s.push_str(&format!(
        "<p>{} checked: {} clean, {} with violations — <span class=\"error\">{}</span>, <span class=\"warning\">{}</span>, <span class=\"info\">{} info</span>.</p>\n",
        count(sum.dirs, "directory", "directories"),
        sum.clean,
        sum.with_violations,
        count(sum.errors, "error", "errors"),
        count(sum.warnings, "warning", "warnings"),
        sum.infos
    ));
    s.push_str("<p>Severity: <span class=\"error\">error</span> — the model cannot run as submitted, or a claim it makes is false; <span class=\"warning\">warning</span> — likely wrong, a reviewer would send it back; <span class=\"info\">info</span> — worth knowing.</p>\n");
    let rules = by_rule(reports);
    if !rules.is_empty() {
        s.push_str("<table><tr><th>rule</th><th>severity</th><th>findings</th></tr>\n");
        for (r, sev, n) in rules {
            s.push_str(&format!(
                "<tr><td><code>{r}</code></td><td class=\"{sev}\">{sev}</td><td>{n}</td></tr>\n"
            ));
        }
        s.push_str("</table>\n");
    }
    for r in ordered(reports) {
        s.push_str(&format!(
            "<h2>{} — {}</h2>\n",
            esc(&r.dir.display().to_string()),
            counts(r)
        ));
        if !r.findings.is_empty() {
            s.push_str("<table><tr><th>severity</th><th>where</th><th>rule</th><th>finding and fix</th></tr>\n");
            let mut fs: Vec<_> = r.findings.iter().collect();
            fs.sort_by_key(|f| f.severity());
            for f in fs {
                s.push_str(&format!(
                    "<tr><td class=\"{sev}\">{sev}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>\n",
                    esc(&location(f)),
                    f.rule,
                    esc(&f.message),
                    sev = f.severity()
                ));
            }
            s.push_str("</table>\n");
        }
        for p in &r.compared {
            s.push_str(&format!(
                "<p><strong>Compared</strong> <code>{}</code>: {}</p>\n",
                esc(&pair_name(p)),
                esc(&pair_figures(p))
            ));
            match loss_svg(p) {
                Ok(svg) => s.push_str(&format!("<figure>{svg}</figure>\n")),
                Err(e) => s.push_str(&format!("<p>(no picture: {})</p>\n", esc(&e))),
            }
        }
    }
    s.push_str("</body></html>\n");
    s
}

/// Write a report file atomically, after checking its path
/// ([`modelzoo_support::check_output_path`]): absent or a regular file, and none of `inputs`
/// (the directories, case files and model.yaml files validated) — a report never replaces a
/// device node, a FIFO or the README it reviews.
pub fn write(
    path: &Path,
    text: &str,
    inputs: &[&Path],
) -> Result<(), modelzoo_support::OutputPathError> {
    modelzoo_support::write_report(path, text.as_bytes(), inputs)
}

#[cfg(test)]
mod tests {
    use crate::compare::plot::tests::{tcap_log, within, EXTREMES};
    use crate::finding::{LossPair, PairSource};
    use std::time::Duration;

    /// Issue #38 C10: `validate --md` drawing the loss curves of logs whose values span
    /// ±9e307 looped forever; any finite values (NaN and infinities mixed in) give a picture.
    #[test]
    fn loss_curves_of_extreme_values_are_drawn_in_bounded_time() {
        for values in EXTREMES {
            let t = tempfile::tempdir().unwrap();
            let (cuda, sdaa) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
            tcap_log(&cuda, values);
            tcap_log(&sdaa, values);
            let pair = LossPair {
                source: PairSource::Logs { cuda, sdaa },
                read_as: "log reader",
                cuda_values: values.len(),
                sdaa_values: values.len(),
                steps: values.len(),
                mean_relative_error: 0.0,
                mean_absolute_error: 0.0,
                pass: true,
            };
            let svg = within(
                Duration::from_secs(30),
                format!("the loss curves of {values:?}"),
                move || super::loss_svg(&pair),
            );
            let svg = svg.unwrap_or_else(|e| panic!("{values:?}: {e}"));
            assert!(svg.contains("<svg"), "{values:?}");
        }
    }

    #[test]
    fn base64_pads() {
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foo"), "Zm9v");
        assert_eq!(super::base64(b"<svg/>"), "PHN2Zy8+");
    }
}
