//! The multi-run comparison as text, report.md, summary.json and a report directory.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::runs::{RunsComparison, ALPHA};
use super::{counted, pct, CompareError, Rule, MODELZOO_LOSS_MEAN_REL};

pub(super) fn fmt_num(x: f64) -> String {
    if x.is_finite() && x != 0.0 && (x.abs() >= 1e5 || x.abs() < 1e-3) {
        format!("{x:.4e}")
    } else {
        format!("{x:.6}")
    }
}

pub(super) fn fmt_t(t: f64) -> String {
    if t.is_finite() {
        format!("{t:.3}")
    } else if t > 0.0 {
        "+inf (no spread)".into()
    } else {
        "-inf (no spread)".into()
    }
}

/// The text summary of a multi-run comparison (the verdict line last).
pub fn runs_text(r: &RunsComparison) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "runs: {} baseline and {} candidate log(s) of `{}` for rank {} — final value = mean of each run's last {} value(s); {} ({})",
        r.baseline.runs.len(),
        r.candidate.runs.len(),
        r.metric,
        r.rank,
        r.tail,
        r.goal.words(),
        r.goal_note
    );
    for (role, side) in [("baseline", &r.baseline), ("candidate", &r.candidate)] {
        for (i, run) in side.runs.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {role:<9} {:>2}  {:>14}  ({})  {}",
                i + 1,
                if run.finite {
                    fmt_num(run.final_value)
                } else {
                    "NaN/inf".to_string()
                },
                counted(run.values as u64, "value"),
                run.path.display()
            );
        }
    }
    let _ = writeln!(
        out,
        "  {:<9} {:>4} {:>14} {:>14} {:>14} {:>14} {:>14}",
        "", "runs", "mean", "std", "min", "max", "olympic mean"
    );
    let opt = |x: Option<f64>| x.map(fmt_num).unwrap_or_else(|| "—".into());
    for (role, s) in [
        ("baseline", &r.baseline.spread),
        ("candidate", &r.candidate.spread),
    ] {
        let _ = writeln!(
            out,
            "  {role:<9} {:>4} {:>14} {:>14} {:>14} {:>14} {:>14}",
            s.n,
            fmt_num(s.mean),
            opt(s.std),
            fmt_num(s.min),
            fmt_num(s.max),
            opt(s.olympic_mean)
        );
    }
    if let Some(t) = &r.test {
        let _ = writeln!(
            out,
            "  Welch's t-test, one-sided, H0: candidate worse by ≤ {} × |baseline mean| = {}: worse by {}{}, t = {}, df = {}, p = {:.4} (α = {})",
            pct(t.margin_rel),
            fmt_num(t.margin),
            fmt_num(t.worse_by),
            t.worse_by_rel.map(|x| format!(" ({})", pct(x))).unwrap_or_default(),
            fmt_t(t.t),
            t.df.map(|d| format!("{d:.2}")).unwrap_or_else(|| "undefined".into()),
            t.p,
            t.alpha
        );
    }
    let failing = r.pairs.iter().filter(|p| !p.pass).count();
    let _ = writeln!(
        out,
        "per-pair rule ({}){}: {} of {} pair(s) fail",
        rule_words(&r.rule),
        if r.decided_by == "welch" {
            ", beside the test"
        } else {
            ""
        },
        failing,
        r.pairs.len()
    );
    for (i, p) in r.pairs.iter().enumerate() {
        let _ = writeln!(
            out,
            "  pair {}: {} vs {}: {} (relative error of the final value {})",
            i + 1,
            p.baseline.display(),
            p.candidate.display(),
            if p.pass { "PASS" } else { "FAIL" },
            if p.final_rel_err.is_finite() {
                pct(p.final_rel_err)
            } else {
                "undefined".into()
            }
        );
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let _ = writeln!(out, "{}", verdict_line(r));
    out
}

/// `PASS (welch, α = 0.05, rel1 1.0000%): …` — the verdict line.
pub fn verdict_line(r: &RunsComparison) -> String {
    format!(
        "{} ({}{}, {}): {}",
        if r.pass { "PASS" } else { "FAIL" },
        r.decided_by,
        if r.decided_by == "welch" {
            format!(", α = {ALPHA}")
        } else {
            String::new()
        },
        rule_words(&r.rule),
        r.reason
    )
}

fn rule_words(rule: &Rule) -> String {
    match rule {
        Rule::Rel1 { threshold } => format!("rel1, threshold {}", pct(*threshold)),
        Rule::ModelzooLoss => format!("modelzoo-loss, margin {}", pct(MODELZOO_LOSS_MEAN_REL)),
    }
}

/// report.md of a multi-run comparison: every name escaped.
pub fn runs_markdown(r: &RunsComparison, command: &str) -> String {
    use modelzoo_support::markdown::{code, text};
    use std::fmt::Write as _;
    let mut md = String::new();
    let _ = writeln!(md, "## 训练结果 / Training results across runs\n");
    let _ = writeln!(md, "Command: {}\n", code(command));
    let _ = writeln!(
        md,
        "Metric {} for rank {}; final value = mean of each run's last {} value(s); {} ({}).\n",
        code(&r.metric),
        r.rank,
        r.tail,
        r.goal.words(),
        text(&r.goal_note)
    );
    let _ = writeln!(
        md,
        "| side | run | final value | values | log |\n|---|---|---|---|---|"
    );
    for (role, side) in [("baseline", &r.baseline), ("candidate", &r.candidate)] {
        for (i, run) in side.runs.iter().enumerate() {
            let _ = writeln!(
                md,
                "| {role} | {} | {} | {} | {} |",
                i + 1,
                if run.finite {
                    fmt_num(run.final_value)
                } else {
                    "NaN/inf".into()
                },
                run.values,
                text(&run.path.display().to_string())
            );
        }
    }
    let opt = |x: Option<f64>| x.map(fmt_num).unwrap_or_else(|| "—".into());
    let _ = writeln!(
        md,
        "\n| side | runs | mean | std | min | max | olympic mean |\n|---|---|---|---|---|---|---|"
    );
    for (role, s) in [
        ("baseline", &r.baseline.spread),
        ("candidate", &r.candidate.spread),
    ] {
        let _ = writeln!(
            md,
            "| {role} | {} | {} | {} | {} | {} | {} |",
            s.n,
            fmt_num(s.mean),
            opt(s.std),
            fmt_num(s.min),
            fmt_num(s.max),
            opt(s.olympic_mean)
        );
    }
    let _ = writeln!(
        md,
        "\n| pair | baseline | candidate | per-pair rule | relative error of the final value |\n|---|---|---|---|---|"
    );
    for (i, p) in r.pairs.iter().enumerate() {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            i + 1,
            text(&p.baseline.display().to_string()),
            text(&p.candidate.display().to_string()),
            if p.pass { "PASS" } else { "FAIL" },
            if p.final_rel_err.is_finite() {
                pct(p.final_rel_err)
            } else {
                "undefined".into()
            }
        );
    }
    let _ = writeln!(md, "\n**{}**", text(&verdict_line(r)));
    if !r.warnings.is_empty() {
        let _ = writeln!(md, "\nWarnings:\n");
        for w in &r.warnings {
            let _ = writeln!(md, "- {}", text(w));
        }
    }
    md
}

/// summary.json of a multi-run comparison.
pub fn runs_json(r: &RunsComparison, command: &str) -> String {
    #[derive(Serialize)]
    struct Out<'a> {
        command: &'a str,
        pass: bool,
        #[serde(flatten)]
        runs: &'a RunsComparison,
    }
    let mut s = serde_json::to_string_pretty(&Out {
        command,
        pass: r.pass,
        runs: r,
    })
    .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// Write report.md and summary.json of the runs into `dir`, and each pair's full report
/// into `dir/pair-<i>/`.
pub fn write_runs_report(
    dir: &Path,
    r: &RunsComparison,
    command: &str,
) -> Result<Vec<PathBuf>, CompareError> {
    let err = |message: String| CompareError::Report {
        path: dir.to_path_buf(),
        message,
    };
    std::fs::create_dir_all(dir).map_err(|e| err(format!("cannot create: {e}")))?;
    let mut written = Vec::new();
    for (i, cmp) in r.comparisons.iter().enumerate() {
        written.extend(super::report::write_report(
            &dir.join(format!("pair-{}", i + 1)),
            cmp,
            command,
        )?);
    }
    for (name, body) in [
        ("report.md", runs_markdown(r, command)),
        ("summary.json", runs_json(r, command)),
    ] {
        written.push(
            super::report::write_atomic(dir, name, body.as_bytes())
                .map_err(|e| err(format!("cannot write {name}: {e}")))?,
        );
    }
    Ok(written)
}
