//! `modelzoo validate` — check model directories against the ModelZoo layout rules, and the
//! public ModelZoo's case file (`PyTorch/contrib/model_config/model.yaml`) against its rules.
//!
//! Besides the layout rules, the review's cross-file and zoo-wide rules run (unless
//! `--layout-only`); `--md FILE` / `--html FILE` write a reviewer's report.
//!
//! Exit codes: 0 everything checked is clean (info findings allowed), 1 violations found
//! (errors or warnings), 2 could not run (a path that is neither a directory nor a case file,
//! an unusable --model-yaml, nothing to check, a report that cannot be written).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use validator::layout::{self, all_rules, Options, Validator};
use validator::review;

/// Output format of the findings.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// `path: rule-id: message` lines, then a summary.
    Text,
    /// One JSON document: reports per directory and a summary.
    Json,
    /// JUnit XML: one testsuite, a testcase per model directory, a failure per violation.
    Junit,
}

#[derive(clap::Args)]
pub struct Args {
    /// Model directories to check (Python ModelZoo layout or a Rust model crate); a zoo root
    /// (holding PyTorch/contrib/model_config/model.yaml) or a ModelZoo case file checks the
    /// case file.
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Find every model directory under ROOT (e.g. PyTorch/contrib) and check them all.
    #[arg(long, value_name = "ROOT")]
    pub all: Vec<PathBuf>,
    /// model.yaml to look entries up in; by default the nearest model_config/model.yaml
    /// above each model directory is used, if any.
    #[arg(long, value_name = "FILE")]
    pub model_yaml: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Print every rule's id, severity and description, then exit.
    #[arg(long)]
    pub list_rules: bool,
    /// Only the layout rules (what the PR check asks for): no cross-file or zoo-wide review.
    #[arg(long)]
    pub layout_only: bool,
    /// Also write the reviewer's report as Markdown to FILE (models by severity, each finding
    /// with file:line and fix, a loss-curve picture of each log pair compared).
    #[arg(long, value_name = "FILE")]
    pub md: Option<PathBuf>,
    /// Also write the reviewer's report as one self-contained HTML file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.list_rules {
        let width = all_rules().map(|r| r.id.len()).max().unwrap_or(0);
        for r in all_rules() {
            println!(
                "{:<width$}  {:<7}  {}",
                r.id,
                r.severity.word(),
                r.description
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.dirs.is_empty() && args.all.is_empty() {
        anyhow::bail!(
            "nothing to check: give model directories (`modelzoo validate DIR...`) or a tree (`--all ROOT`)"
        );
    }
    // The reports' paths, checked before anything is read: never a device, FIFO, directory
    // or symbolic link, never one of the inputs (a file inside a directory being validated,
    // the case file, a model.yaml the rules read).
    let inputs = inputs(&args);
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let outputs: Vec<(&str, &Path)> = [("--md", &args.md), ("--html", &args.html)]
        .into_iter()
        .filter_map(|(what, p)| p.as_deref().map(|p| (what, p)))
        .collect();
    modelzoo_support::check_output_paths(&outputs, &inputs)?;
    let mut v = Validator::new(&Options {
        model_yaml: args.model_yaml.clone(),
    })?
    .with_review(!args.layout_only);
    let mut reports = Vec::new();
    for dir in &args.dirs {
        reports.push(v.check_path(dir)?);
    }
    for root in &args.all {
        let found = v.check_tree(root).context("--all")?;
        if found.is_empty() {
            tracing::warn!("no model directories found under {}", root.display());
        }
        reports.extend(found);
    }
    let out = match args.format {
        Format::Text => layout::render_text(&reports),
        Format::Json => layout::render_json(&reports),
        Format::Junit => layout::render_junit(&reports),
    };
    print!("{out}");
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    for (path, text) in [
        (
            &args.md,
            args.md
                .as_ref()
                .map(|_| review::report::markdown(&reports, &command)),
        ),
        (
            &args.html,
            args.html
                .as_ref()
                .map(|_| review::report::html(&reports, &command)),
        ),
    ] {
        if let (Some(path), Some(text)) = (path, text) {
            review::report::write(path, &text, &inputs)
                .with_context(|| format!("cannot write the report {}", path.display()))?;
        }
    }
    Ok(if !reports.iter().any(|r| r.has_violations()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What validate reads: the directories and trees given, `--model-yaml`, and the model.yaml
/// files the `model-yaml.entry` rule finds above them (`model_config/model.yaml` in a
/// directory or any ancestor).
fn inputs(args: &Args) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = args.dirs.iter().chain(&args.all).cloned().collect();
    out.extend(args.model_yaml.clone());
    for dir in args.dirs.iter().chain(&args.all) {
        let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        for a in abs.ancestors() {
            let found = a.join("model_config").join("model.yaml");
            if found.exists() {
                out.push(found);
            }
        }
    }
    out
}
