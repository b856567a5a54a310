//! The check's results as a console table, JUnit XML (one testcase per model) and Markdown.
//! All three count a model as passed, skipped or failed by [`ModelResult::status`], so they
//! agree with each other and with the exit code, and all three name the device each model ran
//! on — `sdaa (EMULATOR)` when it was the SDAA emulator, so an emulator run is never read as a
//! hardware result.

use std::fmt::Write as _;

use modelzoo_support::junit::{Case, Layout, Outcome, Suite};
use modelzoo_support::markdown as md;

use crate::{ModelResult, Stage, Status, Summary};

/// `model | layout | run | log check | time | device` as an aligned text table, then one line
/// per failure with its detail, then the counts.
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
        "{:<name_w$}  {:<6}  {:<6}  {:<9}  {:>8}  device",
        "model", "layout", "run", "log check", "time"
    );
    for r in results {
        let _ = writeln!(
            out,
            "{:<name_w$}  {:<6}  {:<6}  {:<9}  {:>7.1}s  {}",
            r.name,
            r.layout.label(),
            r.run.label(),
            r.log.label(),
            r.seconds,
            r.device
        );
    }
    for r in results {
        for (stage, s) in [("layout", &r.layout), ("run", &r.run), ("log", &r.log)] {
            if s.failed() {
                let _ = writeln!(out, "{} {stage}: {}", r.name, s.detail());
            }
        }
    }
    let _ = writeln!(out, "{}", Summary::of(results));
    out
}

/// The devices of a run, each once, in order (one, as a rule: `--device` is one device).
fn devices(results: &[ModelResult]) -> Vec<&str> {
    let mut all: Vec<&str> = Vec::new();
    for r in results {
        if !all.contains(&r.device.as_str()) {
            all.push(&r.device);
        }
    }
    all
}

/// JUnit XML: a `testsuite` `modelzoo-ci` with a `testcase` per model; failures carry every
/// failed stage, the device, the command and the console log, skips say why. A run on the
/// SDAA emulator is named so in the suite: `modelzoo-ci on sdaa (EMULATOR)`.
pub fn render_junit(results: &[ModelResult]) -> String {
    let cases = results
        .iter()
        .map(|r| {
            let failed: Vec<String> = [("layout", &r.layout), ("run", &r.run), ("log", &r.log)]
                .iter()
                .filter(|(_, s)| s.failed())
                .map(|(n, s)| format!("{n}: {}", s.detail()))
                .collect();
            let outcomes = if !failed.is_empty() {
                vec![Outcome::Failure {
                    kind: None,
                    message: failed[0].clone(),
                    text: format!(
                        "{}\ndevice: {}\ncommand: {}\nconsole: {}",
                        failed.join("\n"),
                        r.device,
                        r.command,
                        r.console.display()
                    ),
                }]
            } else if r.status() == Status::Skip {
                vec![Outcome::Skipped {
                    message: skip_reason(r).to_string(),
                }]
            } else {
                Vec::new()
            };
            Case {
                classname: "modelzoo-ci".into(),
                name: r.name.clone(),
                time: Some(r.seconds),
                outcomes,
            }
        })
        .collect();
    let emulated: Vec<&str> = devices(results)
        .into_iter()
        .filter(|d| d.contains("EMULATOR"))
        .collect();
    let name = if emulated.is_empty() {
        "modelzoo-ci".to_string()
    } else {
        format!("modelzoo-ci on {}", emulated.join(", "))
    };
    Suite {
        name,
        time: Some(results.iter().map(|r| r.seconds).sum()),
        cases,
    }
    .render(Layout::Wrapped)
}

/// Markdown summary for a PR comment: the counts, the device, the table, the details of each
/// failure, then why each skipped model was skipped. Every name, command, path and log text is
/// escaped ([`modelzoo_support::markdown`]): a model name, a command or a console line with a
/// backtick, `|` or `*` reads as written and cannot break the table or a code span.
pub fn render_markdown(results: &[ModelResult]) -> String {
    let mut out = String::from("# modelzoo ci\n\n");
    let _ = writeln!(out, "{}.\n", Summary::of(results));
    let devices = devices(results);
    if !devices.is_empty() {
        let names: Vec<String> = devices.iter().map(|d| md::text(d)).collect();
        let _ = writeln!(out, "Device: {}.", names.join(", "));
        if devices.iter().any(|d| d.contains("EMULATOR")) {
            let _ = writeln!(
                out,
                "The SDAA runs went to the SDAA EMULATOR (no SDAA card here): they are not SDAA hardware results."
            );
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "| model | layout | run | log check | time | device |\n|---|---|---|---|---|---|"
    );
    for r in results {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.1} s | {} |",
            md::text(&r.name),
            r.layout.label(),
            r.run.label(),
            r.log.label(),
            r.seconds,
            md::text(&r.device)
        );
    }
    for r in results.iter().filter(|r| r.failed()) {
        let _ = writeln!(out, "\n## {}\n", md::text(&r.name));
        let _ = writeln!(out, "- device: {}", md::text(&r.device));
        let _ = writeln!(out, "- command: {}", md::code(&r.command));
        let _ = writeln!(
            out,
            "- console: {}",
            md::code(&r.console.display().to_string())
        );
        for (n, s) in [("layout", &r.layout), ("run", &r.run), ("log", &r.log)] {
            if s.failed() {
                let _ = writeln!(out, "- {n}: {}", md::text(s.detail()));
            }
        }
    }
    let skipped: Vec<&ModelResult> = results.iter().filter(|r| r.skipped()).collect();
    if !skipped.is_empty() {
        let _ = writeln!(out, "\n## Skipped\n");
        for r in skipped {
            let _ = writeln!(out, "- {}: {}", md::text(&r.name), md::text(skip_reason(r)));
        }
    }
    out
}

/// Why a skipped model was not run: the first skipped stage's reason (the run's, as a rule).
pub(crate) fn skip_reason(r: &ModelResult) -> &str {
    [&r.run, &r.log, &r.layout]
        .into_iter()
        .find(|s| matches!(s, Stage::Skip(_)))
        .map(Stage::detail)
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Issue #38 E13: a name, command or log text with Markdown's own characters cannot break
    /// the table, a code span or a list item.
    #[test]
    fn markdown_escapes_names_commands_and_log_text() {
        let r = ModelResult {
            name: "a|b_`c`".into(),
            dir: PathBuf::from("/zoo/m"),
            device: "cpu".into(),
            layout: Stage::Pass(String::new()),
            run: Stage::Fail("exit status 1; last output: *boom* | `x`\nnext <b>".into()),
            log: Stage::Skip("not run".into()),
            command: "python `run`.py --tag a|b".into(),
            console: PathBuf::from("/w/a`b/console.log"),
            seconds: 1.0,
        };
        let md = render_markdown(&[r]);
        // The table row keeps its six cells: the pipe in the name is escaped.
        let row = md
            .lines()
            .find(|l| l.starts_with("| a"))
            .unwrap_or_else(|| panic!("{md}"));
        assert_eq!(
            row,
            "| a\\|b\\_\\`c\\` | pass | FAIL | skip | 1.0 s | cpu |"
        );
        assert!(md.contains("\n## a\\|b\\_\\`c\\`\n"), "{md}");
        // Code spans outlast the backticks inside.
        assert!(
            md.contains("- command: ``python `run`.py --tag a|b``\n"),
            "{md}"
        );
        assert!(md.contains("- console: ``/w/a`b/console.log``\n"), "{md}");
        // Log text: no emphasis, no HTML, one line.
        assert!(
            md.contains("- run: exit status 1; last output: \\*boom\\* \\| \\`x\\` next \\<b\\>\n"),
            "{md}"
        );
    }
}
