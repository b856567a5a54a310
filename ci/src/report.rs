//! The check's results as a console table, JUnit XML (one testcase per model) and Markdown.
//! All three count a model as passed, skipped or failed by [`ModelResult::status`], so they
//! agree with each other and with the exit code, and all three name the device each model ran
//! on — `sdaa (EMULATOR)` when it was the SDAA emulator, so an emulator run is never read as a
//! hardware result.

use std::fmt::Write as _;

use modelzoo_support::junit::{Case, Layout, Outcome, Suite};

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
/// failure, then why each skipped model was skipped.
pub fn render_markdown(results: &[ModelResult]) -> String {
    let mut out = String::from("# modelzoo ci\n\n");
    let _ = writeln!(out, "{}.\n", Summary::of(results));
    let devices = devices(results);
    if !devices.is_empty() {
        let _ = writeln!(out, "Device: {}.", devices.join(", "));
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
            r.name,
            r.layout.label(),
            r.run.label(),
            r.log.label(),
            r.seconds,
            r.device
        );
    }
    for r in results.iter().filter(|r| r.failed()) {
        let _ = writeln!(out, "\n## {}\n", r.name);
        let _ = writeln!(out, "- device: {}", r.device);
        let _ = writeln!(out, "- command: `{}`", r.command);
        let _ = writeln!(out, "- console: `{}`", r.console.display());
        for (n, s) in [("layout", &r.layout), ("run", &r.run), ("log", &r.log)] {
            if s.failed() {
                let _ = writeln!(out, "- {n}: {}", s.detail());
            }
        }
    }
    let skipped: Vec<&ModelResult> = results.iter().filter(|r| r.skipped()).collect();
    if !skipped.is_empty() {
        let _ = writeln!(out, "\n## Skipped\n");
        for r in skipped {
            let _ = writeln!(out, "- {}: {}", r.name, skip_reason(r));
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
