//! `modelzoo migrate <dir>`: port a PyTorch model directory from CUDA to SDAA.
//!
//! Dry run by default: prints a unified diff per file on stdout and the summary (rule
//! counts, what needs a person with file:line, skipped files) on stderr. `--write` applies
//! the changes atomically and keeps the report as `<dir>/MIGRATION.md`, which later runs read
//! back. Exit 0 when it ran, 2 on an error.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    /// The model directory to port (nothing outside it is read or written).
    #[arg(required_unless_present = "list_rules")]
    dir: Option<PathBuf>,
    /// Rewrite the files in place (atomically, modes kept) and keep the report as
    /// <DIR>/MIGRATION.md; without it nothing is written.
    #[arg(long)]
    write: bool,
    /// Also write the report to FILE (atomically): JSON when FILE ends in `.json`, Markdown
    /// otherwise. FILE must be a regular file or absent, and not one of the files migrated.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Print the rule table (id, rewrite/report, what it does) and exit.
    #[arg(long)]
    list_rules: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.list_rules {
        print!("{}", migrate::render_rules());
        return Ok(ExitCode::SUCCESS);
    }
    let dir = args.dir.context("give the model directory to migrate")?;
    // Output paths are checked before anything is read or written.
    if let Some(path) = &args.report {
        migrate::check_output_path(path, None)?;
    }
    let mut report = migrate::scan(&dir)?;
    if let Some(path) = &args.report {
        migrate::check_output_path(path, Some(&report))?;
    }
    if args.write {
        let written = migrate::write(&report)?;
        if written.removed_temp > 0 {
            eprintln!(
                "removed {} leftover temp files of an interrupted run",
                written.removed_temp
            );
        }
        eprintln!(
            "wrote {} files; {} lists them and what still needs a person",
            written.files,
            written.record.display()
        );
        // Findings in the line numbers of the files as written.
        report = written.report;
    } else {
        print!("{}", migrate::render_diff(&report));
    }
    eprint!("{}", migrate::render_summary(&report));
    if !args.write && !report.changes.is_empty() {
        eprintln!("dry run: nothing written; run again with --write to apply");
    }
    if let Some(path) = &args.report {
        migrate::save_report(&report, path).context("cannot write the report")?;
        eprintln!("report: {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
