//! `migrate`: the CUDA→SDAA port of a PyTorch model directory, what torch_sdaa's
//! cuda_migrate, Cambricon's torch_gpu2mlu and Ascend's transfer tools do.
//!
//! [`scan`] migrates every file in memory (a dry run: [`render_diff`] shows it), [`write`]
//! applies it atomically; [`RULES`] is the one table of what is rewritten and what is only
//! reported. The `modelzoo migrate` command is a thin shell over this.

pub mod custom_ops;
mod diff;
pub mod meter;
pub mod pysrc;
pub mod record;
mod regular;
pub mod report;
pub mod rules;
pub mod tree;

use std::fmt::Write as _;

pub use record::RECORD_FILE;
pub use regular::skip_dir;
pub use report::{display_path, FileChange, Finding, Report, Skipped, WrittenFile};
pub use rules::{
    migrate_text, migrate_text_in, Action, Context, FileKind, FileOutcome, Note, Rule, RULES,
    SDAA_IMPORT,
};
pub use tree::{check_output_path, scan, write, MigrateError, Written, TEMP_PREFIX};

/// The unified diff of every change (`a/<path>` → `b/<path>`), as `git diff` would show it.
pub fn render_diff(report: &Report) -> String {
    report.changes.iter().map(|c| c.diff.as_str()).collect()
}

/// The summary: files scanned and changed, rewrites per rule, findings and skipped files.
pub fn render_summary(report: &Report) -> String {
    let mut out = String::new();
    let total: usize = report.rule_counts.values().sum();
    let _ = writeln!(
        out,
        "{} files scanned, {} to change, {} rewrites",
        report.files_scanned,
        report.changes.len(),
        total
    );
    for (rule, n) in &report.rule_counts {
        let _ = writeln!(out, "  {rule:<24} {n}");
    }
    if !report.findings.is_empty() {
        let _ = writeln!(out, "{} findings need a look:", report.findings.len());
        for f in &report.findings {
            let _ = writeln!(
                out,
                "  {}:{}: [{}] {}{}",
                display_path(&f.path),
                f.line,
                f.rule,
                f.message,
                if f.recorded {
                    " (recorded in MIGRATION.md)"
                } else {
                    ""
                }
            );
        }
    }
    if !report.skipped.is_empty() {
        let _ = writeln!(out, "{} files skipped:", report.skipped.len());
        for s in &report.skipped {
            let _ = writeln!(out, "  {}: {}", display_path(&s.path), s.reason);
        }
    }
    if !report.leftover_temp.is_empty() {
        let _ = writeln!(
            out,
            "{} leftover temp files of an interrupted --write (the next --write removes them):",
            report.leftover_temp.len()
        );
        for t in &report.leftover_temp {
            let _ = writeln!(out, "  {}", display_path(t));
        }
    }
    out
}

/// The report as Markdown: summary table, rule counts, findings with file:line, skipped files.
pub fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# CUDA → SDAA migration report\n");
    let _ = writeln!(out, "Directory: `{}`\n", report.root.display());
    let _ = writeln!(
        out,
        "| files scanned | files changed | rewrites | findings | skipped |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} |\n",
        report.files_scanned,
        report.changes.len(),
        report.rule_counts.values().sum::<usize>(),
        report.findings.len(),
        report.skipped.len()
    );
    if !report.rule_counts.is_empty() {
        let _ = writeln!(out, "## Rewrites\n\n| rule | count |\n|---|---|");
        for (rule, n) in &report.rule_counts {
            let _ = writeln!(out, "| `{rule}` | {n} |");
        }
        let _ = writeln!(out);
    }
    if !report.changes.is_empty() {
        let _ = writeln!(out, "## Files changed\n");
        for c in &report.changes {
            let rules: Vec<String> = c.rewrites.iter().map(|(r, n)| format!("{r}×{n}")).collect();
            let _ = writeln!(
                out,
                "- `{}`: {} {} ({})",
                display_path(&c.path),
                if c.changed_lines.contains([',', '-']) {
                    "lines"
                } else {
                    "line"
                },
                c.changed_lines,
                rules.join(", ")
            );
        }
        let _ = writeln!(out);
    }
    out.push_str(&custom_ops::render_markdown(&report.custom_ops));
    let _ = writeln!(out, "## Needs a person\n");
    render_findings_and_skipped(&mut out, report);
    out
}

/// The "needs a person" table (or "Nothing.") and the skipped files, as the markdown report and
/// MIGRATION.md both show them; the caller writes the section heading.
pub(crate) fn render_findings_and_skipped(out: &mut String, report: &Report) {
    if report.findings.is_empty() {
        let _ = writeln!(out, "Nothing.\n");
    } else {
        let _ = writeln!(out, "| where | rule | what |\n|---|---|---|");
        for f in &report.findings {
            let _ = writeln!(
                out,
                "| `{}:{}` | `{}` | {} |",
                display_path(&f.path),
                f.line,
                f.rule,
                f.message.replace('|', "\\|")
            );
        }
        let _ = writeln!(out);
    }
    if !report.skipped.is_empty() {
        let _ = writeln!(out, "## Skipped files\n");
        for s in &report.skipped {
            let _ = writeln!(out, "- `{}`: {}", display_path(&s.path), s.reason);
        }
        let _ = writeln!(out);
    }
}

/// The report as JSON (changes without their text).
pub fn render_json(report: &Report) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default()
}

/// Writes the report to `path` atomically: JSON when it ends in `.json`, Markdown otherwise.
pub fn save_report(report: &Report, path: &std::path::Path) -> Result<(), MigrateError> {
    let text = if path.extension().is_some_and(|e| e == "json") {
        render_json(report)
    } else {
        render_markdown(report)
    };
    tree::write_atomic(path, text.as_bytes()).map_err(|source| MigrateError::Io {
        path: path.to_path_buf(),
        error: source,
    })
}

/// The rule table as text, for `--list-rules`.
pub fn render_rules() -> String {
    let mut out = String::new();
    for r in RULES {
        let action = match r.action {
            Action::Rewrite => "rewrite",
            Action::Report => "report",
        };
        let _ = writeln!(out, "{:<24} {:<8} {}", r.id, action, r.description);
    }
    out
}
