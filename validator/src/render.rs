//! The reports of a run: text, JSON and JUnit XML, and the totals they share.

use modelzoo_support::junit::{Case, Layout, Outcome, Suite};
use serde::Serialize;

use crate::finding::{DirReport, Finding, ModelKind};
use crate::rules::Severity;

/// Totals over a run. A violation is an error or a warning; a directory with info findings
/// only is clean.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub dirs: usize,
    pub clean: usize,
    pub with_violations: usize,
    pub violations: usize,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
}

/// Totals for a set of reports.
pub fn summarize(reports: &[DirReport]) -> Summary {
    let with_violations = reports.iter().filter(|r| r.has_violations()).count();
    let count = |sev: Severity| {
        reports
            .iter()
            .flat_map(|r| &r.findings)
            .filter(|f| f.severity() == sev)
            .count()
    };
    let (errors, warnings, infos) = (
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
    );
    Summary {
        dirs: reports.len(),
        clean: reports.len() - with_violations,
        with_violations,
        violations: errors + warnings,
        errors,
        warnings,
        infos,
    }
}

/// `path[:line]: rule-id: severity: message` lines, then a one-line summary.
pub fn render_text(reports: &[DirReport]) -> String {
    let mut s = String::new();
    for r in reports {
        for f in &r.findings {
            s.push_str(&format!(
                "{}: {}: {}: {}\n",
                location(f),
                f.rule,
                f.severity(),
                f.message
            ));
        }
    }
    let sum = summarize(reports);
    let case_files = reports
        .iter()
        .filter(|r| r.kind == ModelKind::ZooCases)
        .count();
    let dirs = sum.dirs - case_files;
    let checked = match (dirs, case_files) {
        (d, 0) => format!("{d} model director{}", if d == 1 { "y" } else { "ies" }),
        (0, f) => format!("{f} ModelZoo case file{}", if f == 1 { "" } else { "s" }),
        (d, f) => format!(
            "{d} model director{} and {f} ModelZoo case file{}",
            if d == 1 { "y" } else { "ies" },
            if f == 1 { "" } else { "s" }
        ),
    };
    let breakdown = if sum.violations > 0 && sum.warnings > 0 && sum.errors > 0 {
        format!(
            ": {} error{}, {} warning{}",
            sum.errors,
            plural(sum.errors),
            sum.warnings,
            plural(sum.warnings)
        )
    } else {
        String::new()
    };
    let infos = if sum.infos > 0 {
        format!("; {} info", sum.infos)
    } else {
        String::new()
    };
    s.push_str(&format!(
        "checked {checked}: {} clean, {} with violations ({} violation{}{breakdown}{infos})\n",
        sum.clean,
        sum.with_violations,
        sum.violations,
        plural(sum.violations),
    ));
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// JSON: `{"reports": [...], "summary": {...}}`.
pub fn render_json(reports: &[DirReport]) -> String {
    #[derive(Serialize)]
    struct Out<'a> {
        reports: &'a [DirReport],
        summary: Summary,
    }
    serde_json::to_string_pretty(&Out {
        reports,
        summary: summarize(reports),
    })
    .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialise: {e}\"}}"))
        + "\n"
}

/// JUnit XML: one testsuite, a testcase per model directory, a failure per violation (error
/// or warning; info findings are not failures and are left out).
pub fn render_junit(reports: &[DirReport]) -> String {
    let cases = reports
        .iter()
        .map(|r| Case {
            classname: "modelzoo.validate".into(),
            name: r.dir.display().to_string(),
            time: None,
            outcomes: r
                .findings
                .iter()
                .filter(|f| f.severity().is_violation())
                .map(|f| Outcome::Failure {
                    kind: Some(f.rule.to_string()),
                    message: format!("{}: {}", f.severity(), f.message),
                    text: format!(
                        "{}: {}: {}: {}",
                        location(f),
                        f.rule,
                        f.severity(),
                        f.message
                    ),
                })
                .collect(),
        })
        .collect();
    Suite {
        name: "modelzoo validate".into(),
        time: None,
        cases,
    }
    .render(Layout::Bare)
}

/// `path` or `path:line`, how a finding names where it is.
pub fn location(f: &Finding) -> String {
    match f.line {
        Some(line) => format!("{}:{line}", f.path.display()),
        None => f.path.display().to_string(),
    }
}
