//! The check's results as a console table, JUnit XML (one testcase per model) and Markdown.

use std::fmt::Write as _;

use crate::{ModelResult, Stage};

/// `model | layout | run | log check | time` as an aligned text table, then one line per
/// failure with its detail.
pub fn render_table(results: &[ModelResult]) -> String {
    let name_w = results
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<name_w$}  {:<6}  {:<6}  {:<9}  {:>8}",
        "model", "layout", "run", "log check", "time"
    );
    for r in results {
        let _ = writeln!(
            out,
            "{:<name_w$}  {:<6}  {:<6}  {:<9}  {:>7.1}s",
            r.name,
            r.layout.label(),
            r.run.label(),
            r.log.label(),
            r.seconds
        );
    }
    for r in results {
        for (stage, s) in [("layout", &r.layout), ("run", &r.run), ("log", &r.log)] {
            if s.failed() {
                let _ = writeln!(out, "{} {stage}: {}", r.name, s.detail());
            }
        }
    }
    let failed = results.iter().filter(|r| !r.passed()).count();
    let _ = writeln!(
        out,
        "{} models checked, {} passed, {} failed",
        results.len(),
        results.len() - failed,
        failed
    );
    out
}

/// JUnit XML: a `testsuite` `modelzoo-ci` with a `testcase` per model; failures carry every
/// failed stage, skips say why.
pub fn render_junit(results: &[ModelResult]) -> String {
    let failures = results.iter().filter(|r| !r.passed()).count();
    let skipped = results
        .iter()
        .filter(|r| r.passed() && matches!(r.run, Stage::Skip(_)))
        .count();
    let total: f64 = results.iter().map(|r| r.seconds).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites><testsuite name=\"modelzoo-ci\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" time=\"{total:.3}\">",
        results.len()
    );
    for r in results {
        let _ = write!(
            out,
            "  <testcase classname=\"modelzoo-ci\" name=\"{}\" time=\"{:.3}\">",
            xml(&r.name),
            r.seconds
        );
        let failed: Vec<String> = [("layout", &r.layout), ("run", &r.run), ("log", &r.log)]
            .iter()
            .filter(|(_, s)| s.failed())
            .map(|(n, s)| format!("{n}: {}", s.detail()))
            .collect();
        if !failed.is_empty() {
            let _ = write!(
                out,
                "<failure message=\"{}\">{}</failure>",
                xml(&failed[0]),
                xml(&format!(
                    "{}\ncommand: {}\nconsole: {}",
                    failed.join("\n"),
                    r.command,
                    r.console.display()
                ))
            );
        } else if let Stage::Skip(why) = &r.run {
            let _ = write!(out, "<skipped message=\"{}\"/>", xml(why));
        }
        let _ = writeln!(out, "</testcase>");
    }
    out.push_str("</testsuite></testsuites>\n");
    out
}

/// Markdown summary for a PR comment: the table, then the details of each failure.
pub fn render_markdown(results: &[ModelResult]) -> String {
    let failed = results.iter().filter(|r| !r.passed()).count();
    let mut out = String::from("# modelzoo ci\n\n");
    let _ = writeln!(
        out,
        "{} models checked, {} passed, {} failed.\n",
        results.len(),
        results.len() - failed,
        failed
    );
    let _ = writeln!(
        out,
        "| model | layout | run | log check | time |\n|---|---|---|---|---|"
    );
    for r in results {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.1} s |",
            r.name,
            r.layout.label(),
            r.run.label(),
            r.log.label(),
            r.seconds
        );
    }
    for r in results.iter().filter(|r| !r.passed()) {
        let _ = writeln!(out, "\n## {}\n", r.name);
        let _ = writeln!(out, "- command: `{}`", r.command);
        let _ = writeln!(out, "- console: `{}`", r.console.display());
        for (n, s) in [("layout", &r.layout), ("run", &r.run), ("log", &r.log)] {
            if s.failed() {
                let _ = writeln!(out, "- {n}: {}", s.detail());
            }
        }
    }
    out
}

fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 cannot carry at all.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}
