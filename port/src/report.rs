//! `PORT.md` (for the porter and the reviewer) and `port.json` (for tools), written atomically
//! into the migrated directory. Every file name, command and log text in `PORT.md` goes
//! through [`crate::md`]: nothing a project or a run prints can add a heading, a tag or a
//! table cell to the report.

use std::fmt::Write as _;
use std::path::Path;

use crate::md::{block, cell_code, code, text};
use crate::{steps, Port, PortError, Run, Verdict};

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

/// The headline of each verdict: the same words as the summary's reason, never another.
pub fn verdict_words(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "PASS",
        Verdict::Drift => "FAIL: the port drifted",
        Verdict::StepsDiffer => "FAIL: the two runs' losses cannot be compared step by step",
        Verdict::Crash => "FAIL: the port crashed",
        Verdict::NotOnSdaa => "FAIL: nothing ran on sdaa",
        Verdict::NoCandidateLoss => "FAIL: the port logged no comparable loss",
        Verdict::BaselineFailed => "NOT JUDGED: the original does not run",
        Verdict::KitBaselineFailed => "NOT JUDGED: the kit's CPU baseline failed",
        Verdict::ExtensionNotBuilt => {
            "NOT JUDGED: the project's C++/CUDA extension is not built here"
        }
        Verdict::NotReproducible => "NOT JUDGED: the original is not reproducible",
        Verdict::NoBaselineLoss => "NOT JUDGED: no usable loss in the original's output",
        Verdict::Interrupted => "INTERRUPTED",
    }
}

fn path(p: &Path) -> String {
    code(&p.display().to_string())
}

/// The report a porter reads.
/// The custom ops section: what each routed wrapper ran on each side and how often (rank 0),
/// and the wrappers no route covers.
fn render_routes(md: &mut String, port: &Port) {
    let r = &port.routing;
    if r.port.is_empty() && r.baseline.is_empty() && r.unrouted.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Custom ops\n");
    let mut wrappers: Vec<&str> = r
        .baseline
        .iter()
        .chain(&r.port)
        .map(|o| o.wrapper.as_str())
        .collect();
    wrappers.dedup();
    if !wrappers.is_empty() {
        let _ = writeln!(
            md,
            "Routed by the port's shim (`--op`, `--baseline-op`; the original's default is the \
             project's pure-PyTorch twin); calls counted on rank 0:\n"
        );
        let _ = writeln!(md, "| wrapper | original ran | port ran |\n|---|---|---|");
        let side = |routes: &[crate::ops::OpRoute], run: Option<&Run>, w: &str| {
            let Some(route) = routes.iter().find(|o| o.wrapper == w) else {
                return "the extension as built (not routed)".to_string();
            };
            let class = w.rsplit(':').next().unwrap_or(w);
            let calls = run
                .and_then(|run| run.ops_routed.get(class))
                .map_or("no call recorded".to_string(), |c| {
                    format!("{} calls", c.calls)
                });
            format!("{} ({calls})", code(&route.target))
        };
        for w in wrappers {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                code(w),
                side(&r.baseline, Some(&port.baseline), w),
                side(&r.port, port.candidate.as_ref(), w)
            );
        }
        let _ = writeln!(md);
    }
    if !r.unrouted.is_empty() {
        let _ = writeln!(
            md,
            "Not routed — both sides call the extension as built; route one with `--op \
             CLASS=module:function`:\n"
        );
        for (w, twin) in &r.unrouted {
            let _ = writeln!(
                md,
                "- {}{}",
                code(w),
                twin.as_ref().map_or(String::new(), |t| format!(
                    " (its pure-PyTorch twin: {})",
                    code(t)
                ))
            );
        }
        let _ = writeln!(md);
    }
}

pub fn render_markdown(port: &Port) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Port report: {}\n", verdict_words(port.verdict));
    let _ = writeln!(md, "{}\n", text(&port.summary));
    if port.recheck {
        let _ = writeln!(
            md,
            "This is a recheck (`modelzoo port --recheck`): the port as it is now, edits \
             included, run again and judged against the original's runs of the first port.\n"
        );
    }
    let _ = writeln!(md, "- original: {}", path(&port.src));
    let _ = writeln!(md, "- port: {}", path(&port.out));
    let _ = writeln!(
        md,
        "- command (run as is in a fresh copy of each): {}",
        code(&port.command.join(" "))
    );
    if let Some(seed) = port.seed {
        let _ = writeln!(
            md,
            "- seed: `--seed {seed}`: the kit's shim seeded torch, `random` and numpy with it in \
             every run, original and port, right after torch's import"
        );
    }
    if let Some(rule) = &port.rule {
        let name = match rule.name.as_str() {
            "step-by-step" => "step by step against the original's measured noise",
            "across-runs" => {
                "across several runs a side: Welch's one-sided t-test on the final loss, 1% margin"
            }
            _ => "the ModelZoo's 1% rule on the final value (mean of the last 10 steps)",
        };
        let _ = writeln!(md, "- rule: {name} — {}", text(&rule.why));
    }
    if let Some(faults) = port
        .candidate
        .as_ref()
        .and_then(|c| c.fault_injection.as_ref())
    {
        let _ = writeln!(
            md,
            "- **fault injection**: the port ran with `SDAA_EMU_PERTURB` = {} (the emulator \
             computed those ops wrong on purpose)",
            code(faults)
        );
    }
    if let Some(note) = &port.loss_note {
        let _ = writeln!(md, "- losses: {}", text(note));
    }
    let _ = writeln!(md, "- exit code: {}\n", port.exit_code);

    let _ = writeln!(md, "## The runs\n");
    let _ = writeln!(
        md,
        "| | device | outcome | seconds | loss | steps (rank 0) |\n|---|---|---|---|---|---|"
    );
    run_row(&mut md, "original (baseline)", &port.baseline);
    if let Some(b) = &port.baseline_second {
        run_row(&mut md, "original, second run", b);
    }
    let more = port.across_runs.as_ref();
    let first = if port.baseline_second.is_some() { 3 } else { 2 };
    for (k, b) in more
        .map_or(&[][..], |m| &m.baseline_more[..])
        .iter()
        .enumerate()
    {
        run_row(&mut md, &format!("original, run {}", k + first), b);
    }
    if let Some(c) = &port.candidate {
        run_row(&mut md, "port (candidate)", c);
    }
    for (k, c) in more
        .map_or(&[][..], |m| &m.candidate_more[..])
        .iter()
        .enumerate()
    {
        run_row(&mut md, &format!("port, run {}", k + 2), c);
    }
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "Each run happened in a fresh copy under {}: the original's copied from the \
         project, the port's from this directory; neither is ever written by a run.\n",
        code(&format!("{}/runs/", crate::WORK_DIR))
    );
    if let Some(banner) = port.candidate.as_ref().and_then(|c| c.banner.as_ref()) {
        let _ = writeln!(
            md,
            "The port's console printed a `Torch-SDAA` row, {} — console text, not the record \
             of the device that the verdict goes by.\n",
            code(banner)
        );
    }
    let runs = std::iter::once(("original", &port.baseline))
        .chain(
            port.baseline_second
                .as_ref()
                .map(|b| ("original's second run", b)),
        )
        .chain(port.candidate.as_ref().map(|c| ("port", c)));
    for (name, run) in runs {
        if let Some(site) = &run.crash {
            let _ = writeln!(
                md,
                "The {name} failed in the project at {} in {}: {}  \n{}",
                code(&format!(
                    "{}:{}",
                    site.file.display(),
                    site.crash.frame.line
                )),
                code(&site.crash.frame.function),
                code(site.crash.frame.code.as_deref().unwrap_or("")),
                code(&site.crash.error)
            );
            if let Some(line) = site.original_line {
                let _ = writeln!(
                    md,
                    "  \nIn the original: {}{}",
                    code(&format!("{}:{line}", site.file.display())),
                    site.original_code
                        .as_ref()
                        .map_or(String::new(), |c| format!(": {}", code(c)))
                );
            }
            let _ = writeln!(md);
        }
        if let (true, Some(why)) = (run.ran_to_the_end(), &run.loss_error) {
            let _ = writeln!(md, "No loss in the {name}'s output: {}\n", text(why));
        }
        if !run.ran_to_the_end() && !run.tail.is_empty() {
            let _ = writeln!(
                md,
                "The {name}'s last output (all of it in {}):\n\n{}\n",
                path(&run.console),
                block(&run.tail.join("\n"))
            );
        }
    }

    if !port.steps.is_empty() {
        let _ = writeln!(md, "## Step by step\n");
        let _ = writeln!(
            md,
            "Tolerance at each step: the largest of the original's run-to-run noise (the \
             largest difference of its two runs over all steps), one unit of the last printed \
             decimal, and {} float32 ulps of the value.\n",
            steps::FLOOR_ULPS
        );
        let _ = writeln!(
            md,
            "| loss | steps | noise | print unit | largest difference | largest relative | outcome |\n|---|---|---|---|---|---|---|"
        );
        for j in &port.steps {
            let outcome = match &j.outcome {
                steps::Outcome::Pass => "every step within tolerance".to_string(),
                steps::Outcome::Fail(f) => format!(
                    "first beyond at {}: original {}, port {}, difference {:.3e} > tolerance {:.3e}",
                    text(&f.step),
                    f.baseline,
                    f.candidate,
                    f.difference,
                    f.tolerance
                ),
                steps::Outcome::StepsDiffer { why } => text(why),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {:.3e} | {:.1e} | {:.3e} | {} | {outcome} |",
                cell_code(&j.metric),
                j.steps,
                j.noise,
                j.print_unit,
                j.max_difference,
                steps::fmt_rel(j.max_rel_difference)
            );
        }
        let _ = writeln!(md);
    }

    if let Some(m) = &port.across_runs {
        render_across_runs(&mut md, m, port);
    }
    if let Some(t) = &port.compare_text {
        let _ = writeln!(
            md,
            "## The ModelZoo's acceptance figure (`modelzoo compare`, 1% rule)\n\n{}\n",
            block(t.trim_end())
        );
    }

    let no_eval = std::collections::BTreeMap::new();
    let port_eval = port.candidate.as_ref().map_or(&no_eval, |c| &c.eval);
    render_eval(&mut md, &port.baseline.eval, port_eval);

    let m = &port.migration;
    let _ = writeln!(md, "## What the migration rewrote\n");
    if m.rewrites.is_empty() {
        let _ = writeln!(md, "Nothing: no CUDA-specific code was found.\n");
    } else {
        let _ = writeln!(md, "| file | lines | rewrites |\n|---|---|---|");
        for r in &m.rewrites {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                cell_code(&r.file.display().to_string()),
                text(&r.lines),
                text(&r.rules)
            );
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md, "## What still needs a person\n");
    if m.findings.is_empty() {
        let _ = writeln!(md, "Nothing the migration could see.\n");
    } else {
        for f in &m.findings {
            let _ = writeln!(
                md,
                "- {} \\[{}\\] {}",
                code(&format!("{}:{}", f.file.display(), f.line)),
                text(&f.rule),
                text(&f.message)
            );
        }
        let _ = writeln!(md);
    }
    if !m.not_copied.is_empty() {
        let _ = writeln!(md, "Not copied into the port:\n");
        for (p, why) in &m.not_copied {
            let _ = writeln!(md, "- {}: {}", path(p), text(why));
        }
        let _ = writeln!(md);
    }
    if !m.links_outside.is_empty() {
        let _ = writeln!(
            md,
            "Symbolic links that point outside the project, kept as they are (a run that writes \
             through one writes there):\n"
        );
        for (p, target) in &m.links_outside {
            let _ = writeln!(md, "- {} → {}", path(p), path(target));
        }
        let _ = writeln!(md);
    }
    if !m.links_repointed.is_empty() {
        let _ = writeln!(
            md,
            "Symbolic links into the project, re-pointed into each copy (so no run writes into \
             the project through them):\n"
        );
        for (p, target) in &m.links_repointed {
            let _ = writeln!(md, "- {} (was → {})", path(p), path(target));
        }
        let _ = writeln!(md);
    }

    render_routes(&mut md, port);
    let _ = writeln!(md, "## What ran on the device\n");
    match &port.inventory {
        Some(inv) => {
            let _ = writeln!(
                md,
                "From the SDAA emulator's op inventory of this run ({}; rank 0): {} aten ops ran \
                 on sdaa ({} calls), {} on the host. Coverage in the ModelZoo's form: {} \
                 ({:.2}%).\n",
                path(&inv.file),
                inv.device_ops,
                inv.device_calls,
                inv.host_ops,
                path(&inv.coverage_txt),
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
                    let _ = writeln!(md, "- {} ×{n}", code(op));
                }
                let _ = writeln!(md);
            }
            if !inv.emulator_fallbacks.is_empty() {
                let _ = writeln!(
                    md,
                    "Ops the emulator served through its copying CPU fallback: {}.\n",
                    inv.emulator_fallbacks
                        .iter()
                        .map(|o| code(o))
                        .collect::<Vec<_>>()
                        .join(", ")
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
                "No record of the device runtime from this run (the emulator's op inventory): the \
                 port did not run on the emulator, or did not reach the end. On a real card the \
                 kit cannot read such a record yet.\n"
            );
        }
    }
    let _ = writeln!(
        md,
        "All of the runs' copies and output, the op inventory, the shim and the original's saved \
         runs (for `modelzoo port --recheck`) are in `{}/`.",
        crate::WORK_DIR
    );
    md
}

/// `--runs N`: how the runs differ, what decided, and each metric's runs table and test
/// (validator's own rendering of `modelzoo compare` across runs, every name escaped there).
fn render_across_runs(md: &mut String, m: &crate::multirun::AcrossRuns, port: &Port) {
    let _ = writeln!(
        md,
        "## Across {} runs a side (`--runs {}`)\n",
        m.requested, m.requested
    );
    let _ = writeln!(md, "{}.\n", text(&m.note));
    let decided = match m.decided_by.as_str() {
        "step-by-step" => "the step rule (the original is reproducible, so it applies as with one run); the test across the runs is shown beside it".to_string(),
        "welch" => "Welch's one-sided t-test across the runs (3 or more a side); the per-pair 1% rule is shown beside it".to_string(),
        other => format!("{other}: too few runs a side for the t-test (3 settle it)"),
    };
    let _ = writeln!(md, "What decided: {}.\n", text(&decided));
    let command = port.command.join(" ");
    for r in &m.comparisons {
        let body = validator::compare::runs_markdown(r, &command);
        // validator's heading is a level-2 one; here it sits under this section.
        let body = body.replacen("## ", "### ", 1);
        let _ = writeln!(md, "{}", body.trim_end());
        let _ = writeln!(md);
    }
}

fn run_row(md: &mut String, name: &str, run: &Run) {
    let metrics = if run.loss_metrics.is_empty() {
        "—".to_string()
    } else {
        run.loss_metrics
            .iter()
            .map(|m| cell_code(m))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        md,
        "| {name} | {} | {} | {:.1} | {metrics} | {} |",
        text(&run.device),
        text(&run.outcome),
        run.seconds,
        run.steps
    );
}

/// The evaluation metrics the runs printed (a COCO summary's `val.mAP`, …): the original's and
/// the port's last values, each mAP beside `modelzoo compare`'s mAP rule. Shown, not judged:
/// the verdict goes by the losses.
fn render_eval(
    md: &mut String,
    b: &std::collections::BTreeMap<String, f64>,
    c: &std::collections::BTreeMap<String, f64>,
) {
    use validator::compare::{is_map_metric, map_allowance, map_passes};
    if b.is_empty() && c.is_empty() {
        return;
    }
    let mut names: Vec<&String> = b.keys().chain(c.keys()).collect();
    names.sort_by_key(|n| (!is_map_metric(n), n.as_str()));
    names.dedup();
    let _ = writeln!(md, "## Evaluation\n");
    let _ = writeln!(
        md,
        "The last value of each evaluation metric the runs printed (the original's first run). \
         An mAP is set against `modelzoo compare`'s mAP rule (docs/compare.md): at most \
         max(1% of the original's, 0.005) lower. Shown, not judged: the verdict goes by the \
         losses.\n"
    );
    let _ = writeln!(
        md,
        "| metric | original | port | mAP rule |\n|---|---|---|---|"
    );
    let shown = |v: Option<&f64>| v.map_or_else(|| "—".to_string(), |v| v.to_string());
    for name in names {
        let (bv, cv) = (b.get(name), c.get(name));
        let rule = match (is_map_metric(name), bv, cv) {
            (false, _, _) => "—".to_string(),
            (true, Some(&bv), Some(&cv)) if map_passes(bv, cv) => {
                format!("within (at most {:.4} lower)", map_allowance(bv))
            }
            (true, Some(&bv), Some(&cv)) => format!(
                "**outside**: {:.4} lower, at most {:.4} allowed",
                bv - cv,
                map_allowance(bv)
            ),
            (true, _, _) => "not set: one side printed none".to_string(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {rule} |",
            cell_code(name),
            shown(bv),
            shown(cv)
        );
    }
    let _ = writeln!(md);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Verdict;

    /// The COCO summary's metrics of both sides: mAP first, held to compare's mAP rule; a
    /// metric one side lacks is a dash; nothing at all without evaluation metrics.
    #[test]
    fn evaluation_table_sets_each_map_against_the_map_rule() {
        let map = |v: &[(&str, f64)]| -> std::collections::BTreeMap<String, f64> {
            v.iter().map(|(k, x)| (k.to_string(), *x)).collect()
        };
        let mut md = String::new();
        render_eval(&mut md, &map(&[]), &map(&[]));
        assert_eq!(md, "");
        let b = map(&[("val.AP50", 0.7), ("val.mAP", 0.5), ("val.segm_mAP", 0.4)]);
        let c = map(&[
            ("val.AP50", 0.1),
            ("val.mAP", 0.496),
            ("val.segm_mAP", 0.39),
        ]);
        render_eval(&mut md, &b, &c);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| `")).collect();
        assert_eq!(
            rows,
            [
                "| `val.mAP` | 0.5 | 0.496 | within (at most 0.0050 lower) |",
                "| `val.segm_mAP` | 0.4 | 0.39 | **outside**: 0.0100 lower, at most 0.0050 allowed |",
                "| `val.AP50` | 0.7 | 0.1 | — |",
            ],
            "{md}"
        );
        let mut md = String::new();
        render_eval(&mut md, &b, &map(&[("val.AP50", 0.7)]));
        assert!(
            md.contains("| `val.mAP` | 0.5 | — | not set: one side printed none |"),
            "{md}"
        );
    }

    #[test]
    fn headlines_never_call_an_incomparable_run_a_drift() {
        let all = [
            Verdict::Pass,
            Verdict::Drift,
            Verdict::StepsDiffer,
            Verdict::Crash,
            Verdict::NotOnSdaa,
            Verdict::NoCandidateLoss,
            Verdict::BaselineFailed,
            Verdict::KitBaselineFailed,
            Verdict::ExtensionNotBuilt,
            Verdict::NotReproducible,
            Verdict::NoBaselineLoss,
            Verdict::Interrupted,
        ];
        for v in all {
            let words = verdict_words(v);
            assert_eq!(
                words.contains("drift"),
                v == Verdict::Drift,
                "{v:?}: {words}"
            );
            // The headline's kind agrees with the exit code.
            let kind = match v.exit_code() {
                0 => "PASS",
                1 => "FAIL",
                2 => "NOT JUDGED",
                _ => "INTERRUPTED",
            };
            assert!(words.starts_with(kind), "{v:?}: {words}");
        }
    }
}
