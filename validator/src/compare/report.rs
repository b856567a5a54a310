//! The `--report-dir` output of `modelzoo compare`: `report.md` (reads like a ModelZoo README
//! "训练结果" section), a self-contained `report.html` (SVG inline, no network), the plots
//! `curves.svg` and `rel_error.svg`, and `summary.json` (written last). Every file is written
//! atomically (temp file in the directory, fsync, rename), so a re-run replaces them whole.

use std::fs;
use std::path::{Path, PathBuf};

use super::plot::{curves_svg, ema_span, rel_error_svg};
use super::{config_lines, counted, coverage_pct, pct, Align, CompareError, Comparison, Rule};

/// The files a report consists of.
pub const FILES: &[&str] = &[
    "curves.svg",
    "rel_error.svg",
    "report.md",
    "report.html",
    "summary.json",
];

/// Write the report into `dir` (created if missing). `command` is the command line shown.
pub fn write_report(
    dir: &Path,
    cmp: &Comparison,
    command: &str,
) -> Result<Vec<PathBuf>, CompareError> {
    let err = |message: String| CompareError::Report {
        path: dir.to_path_buf(),
        message,
    };
    fs::create_dir_all(dir).map_err(|e| err(format!("cannot create: {e}")))?;
    let curves = curves_svg(cmp).map_err(|e| err(format!("cannot draw curves.svg: {e}")))?;
    let rel = rel_error_svg(cmp).map_err(|e| err(format!("cannot draw rel_error.svg: {e}")))?;
    let md = markdown(cmp, command);
    let html = html(cmp, command, &curves, &rel);
    let summary = summary_json(cmp, command);
    let mut written = Vec::new();
    for (name, text) in [
        ("curves.svg", &curves),
        ("rel_error.svg", &rel),
        ("report.md", &md),
        ("report.html", &html),
        ("summary.json", &summary),
    ] {
        written.push(
            write_atomic(dir, name, text.as_bytes())
                .map_err(|e| err(format!("cannot write {name}: {e}")))?,
        );
    }
    Ok(written)
}

/// Writes `bytes` to `dir/name` atomically (see [`modelzoo_support::write_atomic`]) and
/// returns the path, for the reports that list what they wrote.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    modelzoo_support::write_atomic(&path, bytes)?;
    Ok(path)
}

/// summary.json: the comparison without the per-step pairs, plus the command.
pub fn summary_json(cmp: &Comparison, command: &str) -> String {
    #[derive(serde::Serialize)]
    struct Summary<'a> {
        command: &'a str,
        pass: bool,
        #[serde(flatten)]
        comparison: &'a Comparison,
    }
    serde_json::to_string_pretty(&Summary {
        command,
        pass: cmp.verdict.pass,
        comparison: cmp,
    })
    .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialise: {e}\"}}"))
        + "\n"
}

/// The table rows: (figure, value).
pub fn figure_rows(cmp: &Comparison) -> Vec<(String, String)> {
    let f = &cmp.figures;
    let mut rows = vec![
        ("steps compared".to_string(), f.steps_compared.to_string()),
        (
            "steps only in baseline / only in candidate".to_string(),
            format!("{} / {}", cmp.only_in_baseline, cmp.only_in_candidate),
        ),
        (
            "coverage: steps compared of the longer log".to_string(),
            format!(
                "{} of {} ({}; baseline {}, candidate {}; at least {}){}",
                f.steps_compared,
                f.baseline_steps.max(f.candidate_steps),
                coverage_pct(f.coverage),
                f.baseline_steps,
                f.candidate_steps,
                coverage_pct(f.min_coverage),
                if f.coverage < f.min_coverage && cmp.allow_partial {
                    ", partial run allowed"
                } else {
                    ""
                }
            ),
        ),
        (
            format!(
                "final value (mean of last {}) baseline / candidate",
                counted(f.tail as u64, "step")
            ),
            format!("{} / {}", f.final_baseline, f.final_candidate),
        ),
        (
            "relative error of the final value".to_string(),
            if f.final_baseline == 0.0 {
                format!(
                    "undefined (baseline final value is 0; absolute error {:e})",
                    f.final_abs_err
                )
            } else {
                pct(f.final_rel_err)
            },
        ),
        (
            "mean relative error (signed)".to_string(),
            format!("{:.6e}", f.mean_rel_err_signed),
        ),
        (
            "mean \\|relative error\\|".to_string(),
            format!("{:.6e}", f.mean_rel_err_abs),
        ),
        (
            "mean error (signed, c−b)".to_string(),
            format!("{:.6e}", f.mean_diff_signed),
        ),
        (
            "mean absolute error".to_string(),
            format!("{:.6e}", f.mean_abs_err),
        ),
        (
            "max absolute error".to_string(),
            format!("{:.6e} at {}", f.max_abs_err.value, f.max_abs_err.at),
        ),
        (
            "max \\|relative error\\|".to_string(),
            format!("{} at {}", pct(f.max_rel_err.value), f.max_rel_err.at),
        ),
    ];
    if f.zero_baseline_steps > 0 {
        rows.push((
            "steps with baseline 0 (not in relative figures)".into(),
            f.zero_baseline_steps.to_string(),
        ));
    }
    for e in &cmp.eval {
        rows.push((
            format!(
                "{} last value baseline / candidate (relative error)",
                e.metric
            ),
            format!(
                "{} / {} ({})",
                e.baseline,
                e.candidate,
                if e.baseline == 0.0 {
                    "relative error undefined: the baseline's value is 0".to_string()
                } else {
                    pct(e.rel_err)
                }
            ),
        ));
    }
    rows
}

/// The noise-floor table rows (empty without a noise run).
pub fn noise_rows(cmp: &Comparison) -> Vec<(String, String)> {
    let Some(n) = &cmp.noise else {
        return Vec::new();
    };
    vec![
        (
            "noise run (second baseline)".to_string(),
            format!(
                "{} ({}; {} of {} compared {} used)",
                n.path.display(),
                counted(n.values as u64, "value"),
                n.steps,
                n.steps_compared,
                if n.steps_compared == 1 {
                    "step"
                } else {
                    "steps"
                }
            ),
        ),
        (
            "noise deviation, mean \\|n−b\\|/\\|b\\|".to_string(),
            pct(n.noise_dev),
        ),
        (
            "candidate deviation, mean \\|c−b\\|/\\|b\\|".to_string(),
            pct(n.candidate_dev),
        ),
        (
            "ratio candidate / noise".to_string(),
            match n.ratio {
                Some(r) => format!("{r:.3} (limit {})", n.factor),
                None => "undefined (noise deviation is 0)".to_string(),
            },
        ),
        (
            format!(
                "final value deviation (last {}) noise / candidate",
                counted(n.tail as u64, "step")
            ),
            if n.noise_final_dev.is_finite() && n.candidate_final_dev.is_finite() {
                format!(
                    "{} / {}",
                    pct(n.noise_final_dev),
                    pct(n.candidate_final_dev)
                )
            } else {
                "undefined (the baseline's final value is 0)".to_string()
            },
        ),
    ]
}

/// The noise verdict line (None without a noise run).
fn noise_line(cmp: &Comparison) -> Option<String> {
    let n = cmp.noise.as_ref()?;
    Some(format!(
        "noise floor: {} — {} ({}; {})",
        n.verdict.words(),
        n.reason,
        n.rule,
        if n.gate {
            "--noise-gate: this verdict decides pass/fail"
        } else {
            "reported only: the exit code follows the rule above"
        }
    ))
}

fn verdict_line(cmp: &Comparison) -> String {
    let rule = match cmp.verdict.rule {
        Rule::Rel1 { threshold } => format!("rel1, threshold {}", pct(threshold)),
        Rule::ModelzooLoss => "modelzoo-loss, as ModelZoo's loss.py".into(),
    };
    format!(
        "{} ({rule}): {}",
        if cmp.verdict.pass { "PASS" } else { "FAIL" },
        cmp.verdict.reason
    )
}

fn unmatched_lines(cmp: &Comparison, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (side, ranges) in [
        ("baseline", &cmp.only_in_baseline_ranges),
        ("candidate", &cmp.only_in_candidate_ranges),
    ] {
        for r in ranges.iter().take(limit) {
            out.push(format!("only in {side}: {r}"));
        }
        if ranges.len() > limit {
            out.push(format!(
                "only in {side}: … {} more range(s), all in summary.json",
                ranges.len() - limit
            ));
        }
    }
    out
}

/// Which metric each log was read for, when the default fell back (empty otherwise).
fn metric_notes(cmp: &Comparison) -> Vec<String> {
    [("baseline", &cmp.baseline), ("candidate", &cmp.candidate)]
        .iter()
        .filter_map(|(role, s)| {
            s.metric_note
                .as_ref()
                .map(|n| format!("metric of the {role}: `{}` ({n})", s.metric))
        })
        .collect()
}

/// The lines after a FAIL's verdict: what to run next.
fn next_lines(cmp: &Comparison) -> Vec<String> {
    if cmp.next_steps.is_empty() {
        return Vec::new();
    }
    let mut out = vec!["next, to find out why:".to_string()];
    for (i, step) in cmp.next_steps.iter().enumerate() {
        out.push(format!("  {}. {step}", i + 1));
    }
    out
}

/// Plain-text summary for the terminal.
pub fn text(cmp: &Comparison) -> String {
    let mut s = format!(
        "baseline:  {} ({} of {} for rank {}, {}, {} malformed)\ncandidate: {} ({} of {}, {}, {} malformed)\n",
        cmp.baseline.path.display(),
        counted(cmp.baseline.values as u64, "value"),
        cmp.baseline.metric,
        cmp.rank,
        counted(cmp.baseline.lines, "line"),
        cmp.baseline.malformed,
        cmp.candidate.path.display(),
        counted(cmp.candidate.values as u64, "value"),
        cmp.candidate.metric,
        counted(cmp.candidate.lines, "line"),
        cmp.candidate.malformed,
    );
    for l in metric_notes(cmp) {
        s.push_str(&format!("note: {l}\n"));
    }
    for (k, v) in figure_rows(cmp).into_iter().chain(noise_rows(cmp)) {
        s.push_str(&format!("  {:<58} {}\n", k.replace("\\|", "|"), v));
    }
    for l in unmatched_lines(cmp, 10) {
        s.push_str(&format!("{l}\n"));
    }
    for w in &cmp.verdict.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    for l in config_lines(&cmp.config) {
        s.push_str(&format!("{l}\n"));
    }
    s.push_str(&verdict_line(cmp));
    s.push('\n');
    if let Some(l) = noise_line(cmp) {
        s.push_str(&l);
        s.push('\n');
    }
    for l in next_lines(cmp) {
        s.push_str(&format!("{l}\n"));
    }
    s
}

/// The run configuration as a table: one row per fact either log states.
fn config_rows(cmp: &Comparison) -> Vec<[String; 4]> {
    let c = &cmp.config;
    let mut rows: Vec<[String; 4]> = Vec::new();
    for d in &c.differences {
        rows.push([
            format!("{} ({})", d.fact, d.key),
            d.baseline.clone(),
            d.candidate.clone(),
            "**differs**".into(),
        ]);
    }
    for d in &c.expected {
        rows.push([
            d.fact.clone(),
            d.baseline.clone(),
            d.candidate.clone(),
            "meant to differ".into(),
        ]);
    }
    for d in &c.same {
        rows.push([
            d.fact.clone(),
            d.baseline.clone(),
            d.candidate.clone(),
            "same".into(),
        ]);
    }
    for kv in &c.only_baseline {
        let (k, v) = kv.split_once(" = ").unwrap_or((kv, ""));
        rows.push([
            k.into(),
            v.into(),
            "–".into(),
            "only the baseline states it".into(),
        ]);
    }
    for kv in &c.only_candidate {
        let (k, v) = kv.split_once(" = ").unwrap_or((kv, ""));
        rows.push([
            k.into(),
            "–".into(),
            v.into(),
            "only the candidate states it".into(),
        ]);
    }
    rows
}

/// The sentence under the configuration table: what could not be checked.
fn config_note(cmp: &Comparison) -> Option<String> {
    let c = &cmp.config;
    if !c.any() {
        return config_lines(c).into_iter().next();
    }
    (!c.unstated.is_empty()).then(|| {
        format!(
            "Not stated in either log, so not checked: {}.",
            c.unstated.join(", ")
        )
    })
}

/// report.md, shaped like a ModelZoo README "训练结果" section.
pub fn markdown(cmp: &Comparison, command: &str) -> String {
    let mut s = String::from("### 训练结果 / Training results\n\n");
    s.push_str(&format!(
        "SDAA (candidate) vs CUDA (baseline), metric `{}`, rank {}, steps paired by {}.\n\n",
        cmp.metric,
        cmp.rank,
        match cmp.align {
            Align::Key => "(epoch, iteration)",
            Align::Order => "position",
        }
    ));
    s.push_str(&format!("```\n{command}\n```\n\n"));
    s.push_str(&format!(
        "| log | file | values |\n|---|---|---|\n| baseline | `{}` | {} |\n| candidate | `{}` | {} |\n\n",
        cmp.baseline.path.display(),
        cmp.baseline.values,
        cmp.candidate.path.display(),
        cmp.candidate.values
    ));
    for l in metric_notes(cmp) {
        s.push_str(&format!("Note: {l}.\n\n"));
    }
    s.push_str("| figure | value |\n|---|---|\n");
    for (k, v) in figure_rows(cmp).into_iter().chain(noise_rows(cmp)) {
        s.push_str(&format!("| {k} | {v} |\n"));
    }
    s.push_str("\nRun configuration (the logs' PARAMETER and FINISHED records):\n\n");
    let rows = config_rows(cmp);
    if !rows.is_empty() {
        s.push_str("| fact | baseline | candidate | |\n|---|---|---|---|\n");
        for r in rows {
            s.push_str(&format!("| {} | {} | {} | {} |\n", r[0], r[1], r[2], r[3]));
        }
        s.push('\n');
    }
    if let Some(n) = config_note(cmp) {
        s.push_str(&format!("{n}\n\n"));
    }
    s.push_str(&format!("\n**{}**\n\n", verdict_line(cmp)));
    if let Some(l) = noise_line(cmp) {
        s.push_str(&format!("**{l}**\n\n"));
    }
    if !cmp.next_steps.is_empty() {
        s.push_str("Next, to find out why:\n\n");
        for (i, step) in cmp.next_steps.iter().enumerate() {
            s.push_str(&format!("{}. {step}\n", i + 1));
        }
        s.push('\n');
    }
    for w in &cmp.verdict.warnings {
        s.push_str(&format!("> warning: {w}\n\n"));
    }
    let unmatched = unmatched_lines(cmp, 20);
    if !unmatched.is_empty() {
        s.push_str("Steps not compared:\n\n");
        for l in unmatched {
            s.push_str(&format!("- {l}\n"));
        }
        s.push('\n');
    }
    s.push_str(&format!(
        "![{} curves](curves.svg)\n\n![relative error](rel_error.svg)\n\nSmoothed curves: EMA with span max(5, steps/50) = {}.\n",
        cmp.metric,
        ema_span(cmp.pairs.len())
    ));
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// report.html: everything inline (no scripts, no network).
pub fn html(cmp: &Comparison, command: &str, curves: &str, rel: &str) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>modelzoo compare report</title>\n<style>body{font-family:sans-serif;max-width:960px;margin:2em auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}.pass{color:#1a7f37}.fail{color:#cf222e}pre{background:#f6f8fa;padding:8px;overflow-x:auto}</style></head><body>\n",
    );
    s.push_str("<h2>训练结果 / Training results</h2>\n");
    s.push_str(&format!(
        "<p>SDAA (candidate) vs CUDA (baseline), metric <code>{}</code>, rank {}.</p>\n<pre>{}</pre>\n",
        esc(&cmp.metric),
        cmp.rank,
        esc(command)
    ));
    for l in metric_notes(cmp) {
        s.push_str(&format!("<p>Note: {}.</p>\n", esc(&l)));
    }
    s.push_str(&format!(
        "<table><tr><th>log</th><th>file</th><th>values</th></tr><tr><td>baseline</td><td><code>{}</code></td><td>{}</td></tr><tr><td>candidate</td><td><code>{}</code></td><td>{}</td></tr></table>\n<br>\n",
        esc(&cmp.baseline.path.display().to_string()),
        cmp.baseline.values,
        esc(&cmp.candidate.path.display().to_string()),
        cmp.candidate.values
    ));
    s.push_str("<table><tr><th>figure</th><th>value</th></tr>\n");
    for (k, v) in figure_rows(cmp).into_iter().chain(noise_rows(cmp)) {
        s.push_str(&format!(
            "<tr><td>{}</td><td>{}</td></tr>\n",
            esc(&k.replace("\\|", "|")),
            esc(&v)
        ));
    }
    s.push_str("</table>\n");
    s.push_str("<p>Run configuration (the logs' PARAMETER and FINISHED records):</p>\n");
    let rows = config_rows(cmp);
    if !rows.is_empty() {
        s.push_str("<table><tr><th>fact</th><th>baseline</th><th>candidate</th><th></th></tr>\n");
        for r in rows {
            let differs = r[3].contains("differs");
            s.push_str(&format!(
                "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                if differs { " class=\"fail\"" } else { "" },
                esc(&r[0]),
                esc(&r[1]),
                esc(&r[2]),
                esc(&r[3].replace("**", ""))
            ));
        }
        s.push_str("</table>\n");
    }
    if let Some(n) = config_note(cmp) {
        s.push_str(&format!("<p>{}</p>\n", esc(&n)));
    }
    s.push_str(&format!(
        "<p class=\"{}\"><strong>{}</strong></p>\n",
        if cmp.verdict.pass { "pass" } else { "fail" },
        esc(&verdict_line(cmp))
    ));
    if let Some(l) = noise_line(cmp) {
        s.push_str(&format!("<p><strong>{}</strong></p>\n", esc(&l)));
    }
    if !cmp.next_steps.is_empty() {
        s.push_str("<p>Next, to find out why:</p><ol>\n");
        for step in &cmp.next_steps {
            s.push_str(&format!("<li>{}</li>\n", esc(step)));
        }
        s.push_str("</ol>\n");
    }
    for w in &cmp.verdict.warnings {
        s.push_str(&format!("<p>warning: {}</p>\n", esc(w)));
    }
    let unmatched = unmatched_lines(cmp, 20);
    if !unmatched.is_empty() {
        s.push_str("<p>Steps not compared:</p><ul>\n");
        for l in unmatched {
            s.push_str(&format!("<li>{}</li>\n", esc(&l)));
        }
        s.push_str("</ul>\n");
    }
    s.push_str(&format!(
        "<figure>{curves}</figure>\n<figure>{rel}</figure>\n"
    ));
    s.push_str(&format!(
        "<p>Smoothed curves: EMA with span max(5, steps/50) = {}.</p>\n</body></html>\n",
        ema_span(cmp.pairs.len())
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::plot::tests::{tcap_log, within, EXTREMES};
    use std::time::Duration;

    /// Issue #38 C10: `compare --report-dir` on logs whose values span ±9e307 looped forever.
    #[test]
    fn reports_on_extreme_values_are_written_in_bounded_time() {
        for (i, values) in EXTREMES.iter().enumerate() {
            let t = tempfile::tempdir().unwrap();
            let (b, c) = (t.path().join("b.log"), t.path().join("c.log"));
            tcap_log(&b, values);
            let shifted: Vec<f64> = values.iter().rev().copied().collect();
            tcap_log(&c, &shifted);
            let out = t.path().join("report");
            let dir = out.clone();
            let written = within(
                Duration::from_secs(30),
                format!("the report on {values:?}"),
                move || {
                    let opts = crate::compare::Options {
                        min_coverage: 0.0,
                        ..Default::default()
                    };
                    // A comparison refused with a clear error (all values 0) is an answer too.
                    let Ok(cmp) = crate::compare::compare_files(&b, &c, &opts) else {
                        return Ok(None);
                    };
                    write_report(&dir, &cmp, "modelzoo compare")
                        .map(Some)
                        .map_err(|e| e.to_string())
                },
            );
            let written = written.unwrap_or_else(|e| panic!("{values:?}: {e}"));
            let Some(written) = written else {
                assert!(values.iter().all(|v| *v == 0.0), "{values:?} refused");
                continue;
            };
            assert_eq!(written.len(), FILES.len(), "{values:?}");
            let curves = fs::read_to_string(out.join("curves.svg")).unwrap();
            assert!(curves.contains("<svg"), "{values:?}");
            if i == 0 {
                assert!(curves.contains("×1e308"), "the scale is named: {values:?}");
            }
        }
    }
}
