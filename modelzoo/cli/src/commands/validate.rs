//! `modelzoo validate` — check model directories against the ModelZoo layout rules, and the
//! public ModelZoo's case file (`PyTorch/contrib/model_config/model.yaml`) against its rules.
//!
//! Exit codes: 0 everything checked is clean, 1 violations found, 2 could not run (a path that
//! is neither a directory nor a case file, an unusable --model-yaml, nothing to check).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use validator::layout::{self, all_rules, Options, Validator};

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
    /// Print every rule's id and description, then exit.
    #[arg(long)]
    pub list_rules: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.list_rules {
        let width = all_rules().map(|r| r.id.len()).max().unwrap_or(0);
        for r in all_rules() {
            println!("{:<width$}  {}", r.id, r.description);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.dirs.is_empty() && args.all.is_empty() {
        anyhow::bail!(
            "nothing to check: give model directories (`modelzoo validate DIR...`) or a tree (`--all ROOT`)"
        );
    }
    let mut v = Validator::new(&Options {
        model_yaml: args.model_yaml.clone(),
    })?;
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
    Ok(if reports.iter().all(|r| r.findings.is_empty()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
