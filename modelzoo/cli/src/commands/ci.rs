//! `modelzoo ci`: the PR functional check. For each selected model of model.yaml: layout
//! (`validate`), its functional command under its timeout, the log it wrote. Prints a table;
//! writes JUnit XML and a Markdown summary on request. Exit 0 when no model fails (passed or
//! skipped), 1 if one fails, 2 when the check cannot run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use model_config::ModelYaml;

#[derive(clap::Args)]
pub struct Args {
    /// The zoo index to check.
    #[arg(long, default_value = "model_config/model.yaml")]
    model_yaml: PathBuf,
    /// Only the models whose directory changed since this git revision (e.g. origin/main).
    #[arg(long, value_name = "REV", conflicts_with = "models")]
    changed_since: Option<String>,
    /// Only these models (comma-separated names from model.yaml).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    models: Option<Vec<String>>,
    /// Device for every command (`{device}`); models that do not list it are skipped.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Write JUnit XML here.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write a Markdown summary here.
    #[arg(long, value_name = "FILE")]
    md: Option<PathBuf>,
    /// Models checked at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    jobs: u16,
    /// Where each model's output directory and console log go (default: a new temp dir).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let yaml = ModelYaml::load(&args.model_yaml)?;
    let entries =
        modelzoo_ci::select(&yaml, args.models.as_deref(), args.changed_since.as_deref())?;
    if entries.is_empty() {
        println!("no models selected; nothing to check");
        return Ok(ExitCode::SUCCESS);
    }
    let work_dir = match args.work_dir {
        Some(d) => d,
        None => modelzoo_ci::new_work_dir()?,
    };
    eprintln!(
        "modelzoo ci: outputs and console logs in {}",
        work_dir.display()
    );
    // run_<model> binaries built next to this one are found first.
    let path_prefix = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()))
        .into_iter()
        .collect();
    let opts = modelzoo_ci::Options {
        device: args.device,
        jobs: args.jobs as usize,
        work_dir,
        path_prefix,
        kill_grace: Duration::from_secs(5),
        cancel: Arc::new(AtomicBool::new(false)),
    };
    // Ctrl-C / SIGTERM: the commands run in their own process groups and would not see it,
    // so stop them ourselves (their groups are killed) and report what ran.
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&opts.cancel))
            .context("cannot install the SIGINT/SIGTERM handler")?;
    }
    let results = modelzoo_ci::run_all(&yaml, &entries, &opts)?;
    print!("{}", modelzoo_ci::render_table(&results));
    if let Some(path) = &args.junit {
        modelzoo_ci::write_atomic(path, &modelzoo_ci::render_junit(&results))?;
    }
    if let Some(path) = &args.md {
        modelzoo_ci::write_atomic(path, &modelzoo_ci::render_markdown(&results))?;
    }
    if opts.cancel.load(Ordering::SeqCst) {
        eprintln!("modelzoo ci: interrupted");
        return Ok(ExitCode::from(130));
    }
    // Skipped models (not for this device) do not fail the check; they are counted apart.
    Ok(if !results.iter().any(|r| r.failed()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
