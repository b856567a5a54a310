//! `modelzoo diff` — which op drifted: two dumps of one training step (baseline CUDA,
//! candidate SDAA), optionally an fp64 reference, compared tensor by tensor (docs/diff.md).
//!
//! Exit codes: 0 every record passes (or warns), 1 a record fails (the first divergence is
//! named; NaN/Inf in the candidate always fails), 2 unusable input (not a dump, dumps of
//! different models or steps, a truncated tensor file, a file of a dump that is not a regular
//! file — a FIFO is named, never waited on —, nothing to pair, report directory not writable).

use std::path::PathBuf;
use std::process::ExitCode;

use validator::diff::{self, report, Options};

#[derive(clap::Args)]
pub struct Args {
    /// Baseline (CUDA) dump: a step directory, a dump root holding rank<r>/step<N>/, or
    /// msprobe's dump.json.
    #[arg(long, value_name = "DUMP")]
    pub baseline: PathBuf,
    /// Candidate (SDAA) dump.
    #[arg(long, value_name = "DUMP")]
    pub candidate: PathBuf,
    /// An fp64 dump of the same model and step: judge the candidate's error against the
    /// baseline's (≤ 1× pass, ≤ 2× warn, more fail).
    #[arg(long, value_name = "DUMP")]
    pub reference: Option<PathBuf>,
    /// The rank to take where a dump root holds several.
    #[arg(long)]
    pub rank: Option<u32>,
    /// The step to take where a dump root holds several.
    #[arg(long)]
    pub step: Option<u64>,
    /// Write report.md, report.html, summary.json and records.csv here.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
    /// Print summary.json's content on stdout instead of the text summary.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let options = Options {
        baseline: args.baseline,
        candidate: args.candidate,
        reference: args.reference,
        rank: args.rank,
        step: args.step,
    };
    let d = diff::diff(&options)?;
    let command = super::compare::command_line();
    if args.json {
        print!("{}", report::summary_json(&d, &command));
    } else {
        print!("{}", report::text(&d));
    }
    if let Some(dir) = &args.report_dir {
        report::write_report(dir, &d, &command)?;
        tracing::info!("report written to {}", dir.display());
    }
    Ok(if d.pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
