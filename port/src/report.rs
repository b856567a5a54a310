//! `PORT.md` (for the porter and the reviewer) and `port.json` (for tools), written atomically
//! into the migrated directory.

use std::fmt::Write as _;
use std::path::Path;

use crate::{Port, PortError, Run, Verdict};

pub const MARKDOWN_FILE: &str = "PORT.md";
pub const JSON_FILE: &str = "port.json";

/// Writes both files into `out`.
pub(crate) fn write(port: &Port, out: &Path) -> Result<(), PortError> {
    let save = |name: &str, bytes: &[u8]| {
        let path = out.join(name);
        modelzoo_support::write_atomic(&path, bytes).map_err(|e| PortError::Report {
            path,
            message: e.to_string(),
        })
    };
    let json = serde_json::to_string_pretty(port).map_err(|e| PortError::Report {
        path: out.join(JSON_FILE),
        message: e.to_string(),
    })?;
    save(JSON_FILE, json.as_bytes())?;
    save(MARKDOWN_FILE, render_markdown(port).as_bytes())
}

fn verdict_words(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "PASS",
        Verdict::Drift => "FAIL: the port drifted",
        Verdict::Crash => "FAIL: the port crashed",
        Verdict::NotOnSdaa => "FAIL: nothing ran on sdaa",
        Verdict::NoCandidateLoss => "FAIL: the port logged no comparable loss",
        Verdict::BaselineFailed => "NOT RUN: the original does not run",
        Verdict::NoBaselineLoss => "NOT RUN: no loss found in the original's output",
        Verdict::Interrupted => "INTERRUPTED",
    }
}

/// The report a porter reads.
pub fn render_markdown(port: &Port) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Port report: {}\n", verdict_words(port.verdict));
    let _ = writeln!(md, "{}\n", port.summary);
    let _ = writeln!(md, "- original: `{}`", port.src.display());
    let _ = writeln!(md, "- port: `{}`", port.out.display());
    let _ = writeln!(
        md,
        "- command (run as is in each): `{}`",
        port.command.join(" ")
    );
    let _ = writeln!(md, "- exit code: {}\n", port.exit_code);

    let _ = writeln!(md, "## The two runs\n");
    let _ = writeln!(
        md,
        "| | device | outcome | seconds | loss | steps (rank 0) |\n|---|---|---|---|---|---|"
    );
    run_row(&mut md, "original (baseline)", &port.baseline);
    if let Some(c) = &port.candidate {
        run_row(&mut md, "port (candidate)", c);
    }
    let _ = writeln!(md);
    for (name, run) in std::iter::once(("original", &port.baseline))
        .chain(port.candidate.as_ref().map(|c| ("port", c)))
    {
        if let Some(site) = &run.crash {
            let _ = writeln!(
                md,
                "The {name} failed in the project at `{}:{}` in `{}`: `{}`  \n`{}`",
                site.file.display(),
                site.crash.frame.line,
                site.crash.frame.function,
                site.crash.frame.code.as_deref().unwrap_or(""),
                site.crash.error
            );
            if let Some(line) = site.original_line {
                let _ = writeln!(
                    md,
                    "  \nIn the original: `{}:{line}`{}",
                    site.file.display(),
                    site.original_code
                        .as_ref()
                        .map_or(String::new(), |c| format!(": `{c}`"))
                );
            }
            let _ = writeln!(md);
        }
        if let (true, Some(why)) = (run.ran_to_the_end(), &run.loss_error) {
            let _ = writeln!(md, "No loss in the {name}'s output: {why}\n");
        }
        if !run.ran_to_the_end() && !run.tail.is_empty() {
            let _ = writeln!(
                md,
                "The {name}'s last output (all of it in `{}`):\n\n```\n{}\n```\n",
                run.console.display(),
                run.tail.join("\n")
            );
        }
    }

    if let Some(text) = &port.compare_text {
        let _ = writeln!(
            md,
            "## The comparison (`modelzoo compare`, 1% rule)\n\n```\n{}\n```\n",
            text.trim_end()
        );
    }

    let _ = writeln!(md, "## What the migration rewrote\n");
    if port.rewrites.is_empty() {
        let _ = writeln!(md, "Nothing: no CUDA-specific code was found.\n");
    } else {
        let _ = writeln!(md, "| file | lines | rewrites |\n|---|---|---|");
        for r in &port.rewrites {
            let _ = writeln!(md, "| `{}` | {} | {} |", r.file.display(), r.lines, r.rules);
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md, "## What still needs a person\n");
    if port.findings.is_empty() {
        let _ = writeln!(md, "Nothing the migration could see.\n");
    } else {
        for f in &port.findings {
            let _ = writeln!(
                md,
                "- `{}:{}` [{}] {}",
                f.file.display(),
                f.line,
                f.rule,
                f.message
            );
        }
        let _ = writeln!(md);
    }
    if !port.not_copied.is_empty() {
        let _ = writeln!(md, "Not copied into the port:\n");
        for (p, why) in &port.not_copied {
            let _ = writeln!(md, "- `{}`: {why}", p.display());
        }
        let _ = writeln!(md);
    }

    let _ = writeln!(md, "## What ran on the device\n");
    match &port.inventory {
        Some(inv) => {
            let _ = writeln!(
                md,
                "From the SDAA emulator's op inventory (`{}`; rank 0): {} aten ops ran on sdaa \
                 ({} calls), {} on the host. Coverage in the ModelZoo's form: `{}` ({:.2}%).\n",
                inv.file.display(),
                inv.device_ops,
                inv.device_calls,
                inv.host_ops,
                inv.coverage_txt.display(),
                inv.coverage_rate
            );
            if inv.fp64_device.is_empty() {
                let _ = writeln!(md, "No fp64 (Double) on the device.\n");
            } else {
                let _ = writeln!(
                    md,
                    "**fp64 (Double) on the device** — accelerators without fp64 turn it into fp32 \
                     (other vendors' tools do so silently); check these ops:\n"
                );
                for (op, n) in &inv.fp64_device {
                    let _ = writeln!(md, "- `{op}` ×{n}");
                }
                let _ = writeln!(md);
            }
            if !inv.emulator_fallbacks.is_empty() {
                let _ = writeln!(
                    md,
                    "Ops the emulator served through its copying CPU fallback: {}.\n",
                    inv.emulator_fallbacks.join(", ")
                );
            }
            let _ = writeln!(
                md,
                "The emulator runs every op's CPU kernel: its op list says what the port uses, not \
                 which ops a card implements natively, and its timings are CPU timings.\n"
            );
        }
        None => {
            let _ = writeln!(
                md,
                "No op inventory (the port did not run on the emulator, or did not reach the end).\n"
            );
        }
    }
    let _ = writeln!(
        md,
        "All of the runs' output, the op inventory and the CPU baseline's shim are in `{}/`.",
        crate::WORK_DIR
    );
    md
}

fn run_row(md: &mut String, name: &str, run: &Run) {
    let _ = writeln!(
        md,
        "| {name} | {} | {} | {:.1} | {} | {} |",
        run.device,
        run.outcome,
        run.seconds,
        run.loss_metric.as_deref().unwrap_or("—"),
        run.steps
    );
}
