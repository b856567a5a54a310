//! The diff's report: report.md, report.html (self-contained, sortable table), summary.json
//! (with `first_divergence`) and records.csv, each written atomically like `compare`'s.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use super::metrics::{self, Status};
use super::{Diff, DiffError, RecordDiff};
use crate::report::write_atomic;

/// The files a diff report consists of.
pub const FILES: &[&str] = &["report.md", "report.html", "summary.json", "records.csv"];

/// Rows of the HTML table at most (all records are in records.csv and summary.json).
const HTML_ROWS: usize = 5000;

/// The rules, stated once for every output.
pub fn rules(diff: &Diff) -> Vec<String> {
    let mut v = vec![
        format!(
            "Full tensors (msprobe's rule): a record is not reached (fail) when cosine < {} and max_abs > {}, or cosine < {}, or max_abs > {}, or a NaN/Inf element differs. Relative error of an element: |c−b| / max(|b|, {:e}); within_1e-3 / within_5e-3: share of elements with relative error ≤ 1‰ / 5‰.",
            metrics::COSINE_MIN,
            metrics::MAX_ABS_TOLERANCE,
            metrics::COSINE_FLOOR,
            metrics::MAX_ABS_LIMIT,
            metrics::REL_EPS
        ),
        format!(
            "Statistics only: min, max, mean and l2/√n of the candidate against the baseline's, each difference over the baseline tensor's RMS (l2/√n); fail when the largest (stat_diff) > {} or the NaN/Inf counts differ. Equal checksums: stat_diff 0.",
            metrics::STATS_TOLERANCE
        ),
        format!(
            "Small values (msprobe's thresholds: float32 and wider 2^-14 = {:.3e}, float16 2^-11 = {:.3e}, bfloat16 2^-8 = {:.3e}; the coarser of the two dumps' dtypes): a record whose every baseline element (statistics: min and max) is below the threshold in magnitude is near zero — it is judged by its absolute error (full tensors: max_abs; statistics: the largest difference as stat_diff), which must not exceed the threshold, not by cosine or scale; against a near-zero reference each dump's error is its largest absolute error, floored at the threshold in the ratio. small_value_errors: elements below the threshold in the baseline further than it from it.",
            metrics::SMALL_VALUE_F32,
            metrics::SMALL_VALUE_F16,
            metrics::SMALL_VALUE_BF16
        ),
    ];
    if diff.reference.is_some() {
        v.push(format!(
            "With the fp64 reference, the verdict is the arbitration's: error = RMSE against the reference over the reference's RMS (statistics only: stat_diff against the reference), ratio = max(candidate error, {:.2e}) / max(baseline error, {:.2e}); ≤ 1 pass, ≤ {} warn, above fail. msprobe's verdict is kept as rule_verdict.",
            metrics::ERROR_FLOOR,
            metrics::ERROR_FLOOR,
            metrics::RATIO_WARN
        ));
    }
    v.push("First divergence: the first failing record in execution order, forward records before backward.".into());
    v
}

/// Write the report into `dir` (created if missing). `command` is the command line shown.
pub fn write_report(dir: &Path, diff: &Diff, command: &str) -> Result<Vec<PathBuf>, DiffError> {
    let err = |message: String| DiffError::Report {
        path: dir.to_path_buf(),
        message,
    };
    fs::create_dir_all(dir).map_err(|e| err(format!("cannot create: {e}")))?;
    let mut written = Vec::new();
    for (name, text) in [
        ("report.md", markdown(diff, command)),
        ("report.html", html(diff, command)),
        ("summary.json", summary_json(diff, command)),
        ("records.csv", csv(diff)),
    ] {
        written.push(
            write_atomic(dir, name, text.as_bytes())
                .map_err(|e| err(format!("cannot write {name}: {e}")))?,
        );
    }
    Ok(written)
}

/// summary.json: everything, plus the command, the rules and `first_divergence`.
pub fn summary_json(diff: &Diff, command: &str) -> String {
    #[derive(serde::Serialize)]
    struct Summary<'a> {
        command: &'a str,
        rules: Vec<String>,
        first_divergence: Option<&'a RecordDiff>,
        #[serde(flatten)]
        diff: &'a Diff,
    }
    let s = Summary {
        command,
        rules: rules(diff),
        first_divergence: diff.first(),
        diff,
    };
    let mut text =
        serde_json::to_string_pretty(&s).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

fn num(x: Option<f64>) -> String {
    match x {
        None => String::new(),
        Some(v) if v == 0.0 || (1e-3..1e4).contains(&v.abs()) => format!("{v:.6}"),
        Some(v) => format!("{v:.3e}"),
    }
}

/// The columns of the records table and the CSV.
const COLUMNS: &[&str] = &[
    "order",
    "key",
    "op",
    "call",
    "phase",
    "io",
    "index",
    "scope",
    "shape",
    "dtype",
    "mode",
    "cosine",
    "max_abs",
    "max_rel",
    "rmse",
    "within_1e-3",
    "within_5e-3",
    "nan_inf_mismatch",
    "candidate_non_finite",
    "stat_diff",
    "ref_ratio",
    "verdict",
    "reason",
];

fn row(r: &RecordDiff) -> Vec<String> {
    let m = &r.metrics;
    let dtype = if r.baseline_dtype == r.candidate_dtype {
        r.baseline_dtype.clone()
    } else {
        format!("{}/{}", r.baseline_dtype, r.candidate_dtype)
    };
    vec![
        r.order.to_string(),
        r.key.clone(),
        r.op.clone(),
        r.call.to_string(),
        r.phase.clone(),
        r.io.clone(),
        r.index.to_string(),
        r.scope.clone(),
        format!("{:?}", r.shape).replace(' ', ""),
        dtype,
        r.mode.to_string(),
        num(m.cosine),
        num(m.max_abs),
        num(m.max_rel),
        num(m.rmse),
        num(m.within_1e3),
        num(m.within_5e3),
        m.nan_inf_mismatch
            .map(|k| k.to_string())
            .unwrap_or_default(),
        m.candidate_non_finite
            .map(|k| k.to_string())
            .unwrap_or_default(),
        num(m.stat_diff),
        num(r.reference.as_ref().map(|a| a.ratio)),
        r.verdict.word().to_string(),
        r.reason.clone(),
    ]
}

/// records.csv: every compared record, then the unmatched ones (verdict `unmatched`).
pub fn csv(diff: &Diff) -> String {
    let field = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut s = COLUMNS.join(",");
    s.push('\n');
    for r in &diff.records {
        let cells: Vec<String> = row(r).iter().map(|c| field(c)).collect();
        s.push_str(&cells.join(","));
        s.push('\n');
    }
    for (side, keys) in [
        ("baseline", &diff.only_baseline),
        ("candidate", &diff.only_candidate),
    ] {
        for k in keys {
            let mut cells = vec![String::new(); COLUMNS.len()];
            cells[1] = field(k);
            cells[COLUMNS.len() - 2] = "unmatched".into();
            cells[COLUMNS.len() - 1] = format!("only in the {side}");
            s.push_str(&cells.join(","));
            s.push('\n');
        }
    }
    s
}

/// The one-line verdict.
pub fn verdict_line(diff: &Diff) -> String {
    let t = &diff.totals;
    let head = format!(
        "{}: {} record(s) compared, {} pass, {} warn, {} fail",
        if diff.pass { "PASS" } else { "FAIL" },
        t.compared,
        t.pass,
        t.warn,
        t.fail
    );
    match diff.first() {
        Some(r) => format!(
            "{head}; first divergence: {} ({} call {}, scope `{}`): {}",
            r.key, r.op, r.call, r.scope, r.reason
        ),
        None => head,
    }
}

/// The text printed on stdout.
pub fn text(diff: &Diff) -> String {
    let mut s = String::new();
    for (name, d) in [("baseline", &diff.baseline), ("candidate", &diff.candidate)]
        .into_iter()
        .chain(diff.reference.as_ref().map(|r| ("reference", r)))
    {
        let _ = writeln!(
            s,
            "{name}: {} ({} records, {}, {} tensors)",
            d.path.display(),
            d.records,
            d.dtype.as_deref().unwrap_or("dtype unknown"),
            d.tensors
        );
    }
    for w in &diff.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    let _ = writeln!(s, "{}", verdict_line(diff));
    s
}

fn failing(diff: &Diff, n: usize) -> impl Iterator<Item = &RecordDiff> {
    diff.records
        .iter()
        .filter(|r| r.verdict != Status::Pass)
        .take(n)
}

/// report.md.
pub fn markdown(diff: &Diff, command: &str) -> String {
    let mut s = String::from("## Precision diff\n\n");
    let _ = writeln!(s, "```\n{command}\n```\n");
    s.push_str("| dump | path | records | dtype | tensors |\n|---|---|---|---|---|\n");
    for (name, d) in [("baseline", &diff.baseline), ("candidate", &diff.candidate)]
        .into_iter()
        .chain(diff.reference.as_ref().map(|r| ("reference", r)))
    {
        let _ = writeln!(
            s,
            "| {name} | `{}` | {} | {} | {} |",
            d.path.display(),
            d.records,
            d.dtype.as_deref().unwrap_or("?"),
            d.tensors
        );
    }
    let _ = writeln!(s, "\n**{}**\n", verdict_line(diff));
    for w in &diff.warnings {
        let _ = writeln!(s, "- warning: {w}");
    }
    s.push_str("\n### Rules\n\n");
    for r in rules(diff) {
        let _ = writeln!(s, "- {r}");
    }
    s.push_str("\n### Records not passing (first 50, execution order)\n\n");
    let head = [
        "key",
        "scope",
        "cosine",
        "max_abs",
        "max_rel",
        "rmse",
        "stat_diff",
        "ref_ratio",
        "verdict",
        "reason",
    ];
    let _ = writeln!(
        s,
        "| {} |\n|{}",
        head.join(" | "),
        "---|".repeat(head.len())
    );
    for r in failing(diff, 50) {
        let m = &r.metrics;
        let _ = writeln!(
            s,
            "| `{}` | `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.key,
            r.scope,
            num(m.cosine),
            num(m.max_abs),
            num(m.max_rel),
            num(m.rmse),
            num(m.stat_diff),
            num(r.reference.as_ref().map(|a| a.ratio)),
            r.verdict.word(),
            r.reason.replace('|', "\\|")
        );
    }
    if !diff.only_baseline.is_empty() || !diff.only_candidate.is_empty() {
        s.push_str("\n### Unmatched records (first 20 of each)\n\n");
        for (side, keys) in [
            ("baseline", &diff.only_baseline),
            ("candidate", &diff.only_candidate),
        ] {
            for k in keys.iter().take(20) {
                let _ = writeln!(s, "- only in the {side}: `{k}`");
            }
        }
    }
    s.push_str("\nEvery record: records.csv and summary.json.\n");
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Click a header to sort by it (numbers numerically, empty cells last).
const SORT_JS: &str = r#"<script>
document.querySelectorAll('table.sortable th').forEach(function(th,i){th.style.cursor='pointer';th.onclick=function(){
var t=th.closest('table'),b=t.tBodies[0],rows=Array.from(b.rows),asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';
rows.sort(function(x,y){var a=x.cells[i].textContent,c=y.cells[i].textContent;if(a===''&&c!=='')return 1;if(c===''&&a!=='')return -1;
var p=parseFloat(a),q=parseFloat(c),r=(!isNaN(p)&&!isNaN(q))?p-q:a.localeCompare(c);return asc?r:-r;});
rows.forEach(function(r){b.appendChild(r);});};});
</script>"#;

/// report.html: self-contained (inline style and script), every record in a sortable table.
pub fn html(diff: &Diff, command: &str) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>modelzoo diff report</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}th{background:#f0f0f0}.pass{color:#1a7f37}.warn{color:#9a6700}.fail{color:#cf222e}pre{background:#f6f8fa;padding:8px;overflow-x:auto}</style></head><body>\n<h2>Precision diff</h2>\n",
    );
    let _ = writeln!(s, "<pre>{}</pre>", esc(command));
    s.push_str("<table><tr><th>dump</th><th>path</th><th>records</th><th>dtype</th><th>tensors</th></tr>\n");
    for (name, d) in [("baseline", &diff.baseline), ("candidate", &diff.candidate)]
        .into_iter()
        .chain(diff.reference.as_ref().map(|r| ("reference", r)))
    {
        let _ = writeln!(
            s,
            "<tr><td>{name}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&d.path.display().to_string()),
            d.records,
            esc(d.dtype.as_deref().unwrap_or("?")),
            esc(&d.tensors)
        );
    }
    s.push_str("</table>\n");
    let _ = writeln!(
        s,
        "<p class=\"{}\"><strong>{}</strong></p>",
        if diff.pass { "pass" } else { "fail" },
        esc(&verdict_line(diff))
    );
    for w in &diff.warnings {
        let _ = writeln!(s, "<p>warning: {}</p>", esc(w));
    }
    s.push_str("<h3>Rules</h3><ul>\n");
    for r in rules(diff) {
        let _ = writeln!(s, "<li>{}</li>", esc(&r));
    }
    s.push_str("</ul>\n");
    let _ = writeln!(
        s,
        "<h3>Records</h3><p>Click a column to sort.{}</p>",
        if diff.records.len() > HTML_ROWS {
            format!(
                " The first {HTML_ROWS} of {} in execution order; all are in records.csv.",
                diff.records.len()
            )
        } else {
            String::new()
        }
    );
    s.push_str("<table class=\"sortable\"><thead><tr>");
    for c in COLUMNS {
        let _ = write!(s, "<th>{c}</th>");
    }
    s.push_str("</tr></thead><tbody>\n");
    for r in diff.records.iter().take(HTML_ROWS) {
        let _ = write!(s, "<tr class=\"{}\">", r.verdict.word());
        for c in row(r) {
            let _ = write!(s, "<td>{}</td>", esc(&c));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table>\n");
    if !diff.only_baseline.is_empty() || !diff.only_candidate.is_empty() {
        s.push_str("<h3>Unmatched records</h3><ul>\n");
        for (side, keys) in [
            ("baseline", &diff.only_baseline),
            ("candidate", &diff.only_candidate),
        ] {
            for k in keys.iter().take(200) {
                let _ = writeln!(s, "<li>only in the {side}: <code>{}</code></li>", esc(k));
            }
        }
        s.push_str("</ul>\n");
    }
    s.push_str(SORT_JS);
    s.push_str("\n</body></html>\n");
    s
}
