//! `modelzoo ci`: the PR functional check. Reads either model.yaml schema, told apart by its
//! shape: this repository's (for each selected model: layout (`validate`), its functional
//! command under its timeout, the log it wrote) or the public ModelZoo's case list (each case
//! run as the ModelZoo's check runs it, its console read for tcap `train.loss` lines). Commands
//! run with the kit's Python, and `--device sdaa` without a card on the kit's SDAA emulator,
//! labelled `sdaa (EMULATOR)`. Prints a table; writes JUnit XML and a Markdown summary on
//! request. Exit 0 when something was checked and nothing failed, 1 when a model failed or
//! nothing was checked (none selected, or every one skipped), 2 when the check cannot run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use model_config::{ModelEntry, ModelYaml, ZooCase, ZooCases};
use modelzoo_ci::{cases, Index, SdaaBackend};
use modelzoo_support::kit::Kit;

/// What the check will run: models of this repository's model.yaml, or ModelZoo cases.
enum Selected {
    Models(ModelYaml, Vec<ModelEntry>),
    Cases(ZooCases, Vec<ZooCase>),
}

impl Selected {
    fn is_empty(&self) -> bool {
        match self {
            Selected::Models(_, e) => e.is_empty(),
            Selected::Cases(_, c) => c.is_empty(),
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// The zoo index to check: this repository's model.yaml, or the public ModelZoo's
    /// PyTorch/contrib/model_config/model.yaml (a list of cases).
    #[arg(long, default_value = "model_config/model.yaml")]
    model_yaml: PathBuf,
    /// Only the models (cases) whose directory changed since this git revision (e.g.
    /// origin/main).
    #[arg(long, value_name = "REV", conflicts_with = "models")]
    changed_since: Option<String>,
    /// Only these models (comma-separated names from model.yaml; case_names for a case file).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    models: Option<Vec<String>>,
    /// Device for every command: `{device}` (default cpu), or a case's `--device` (default
    /// sdaa). Models that do not list it are skipped.
    #[arg(long)]
    device: Option<String>,
    /// Seconds each ModelZoo case may run, its console check included (the case file gives
    /// no timeout; model.yaml entries carry their own).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: Option<u64>,
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
    /// A model's directory there is emptied before its run only when ci created it.
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Run each model.yaml entry N times (each in a fresh output directory), every run
    /// log-checked; with --baseline-device, compared across the runs (docs/ci.md).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    runs: u64,
    /// Also run each entry (N times) with `{device}` = DEV, and compare the final
    /// `train.loss` across the runs: Welch's one-sided t-test with 3 runs a side, 1% margin.
    #[arg(long, value_name = "DEV")]
    baseline_device: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let index = Index::load(&args.model_yaml)?;
    let is_cases = matches!(index, Index::Cases(_));
    if args.timeout.is_some() && !is_cases {
        anyhow::bail!(
            "--timeout applies to a ModelZoo case file; {} is this repository's model.yaml, whose entries carry their own `timeout`",
            args.model_yaml.display()
        );
    }
    let device = args
        .device
        .clone()
        .unwrap_or_else(|| if is_cases { "sdaa" } else { "cpu" }.to_string());
    if !model_config::model_yaml::DEVICES.contains(&device.as_str()) {
        anyhow::bail!(
            "--device {device}: not a device; one of: {}",
            model_config::model_yaml::DEVICES.join(", ")
        );
    }
    if is_cases && (args.runs > 1 || args.baseline_device.is_some()) {
        anyhow::bail!(
            "--runs and --baseline-device apply to this repository's model.yaml; {} is a ModelZoo case file, whose cases run once as the ModelZoo's check runs them",
            args.model_yaml.display()
        );
    }
    if let Some(b) = &args.baseline_device {
        if !model_config::model_yaml::DEVICES.contains(&b.as_str()) {
            anyhow::bail!(
                "--baseline-device {b}: not a device; one of: {}",
                model_config::model_yaml::DEVICES.join(", ")
            );
        }
        if *b == device {
            anyhow::bail!(
                "--baseline-device {b} is --device itself: give the device to compare against (e.g. --device sdaa --baseline-device cpu)"
            );
        }
    }
    let models = args.models.as_deref();
    let changed = args.changed_since.as_deref();
    let selected = match index {
        Index::Models(yaml) => {
            let entries = modelzoo_ci::select(&yaml, models, changed)?;
            Selected::Models(yaml, entries)
        }
        Index::Cases(zoo) => {
            let picked = cases::select(&zoo, models, changed)?;
            Selected::Cases(zoo, picked)
        }
    };
    // The reports' paths are checked before anything runs (an hour of runs must not end in a
    // report that cannot be written, or one written over model.yaml, a model's README or a
    // device node); the check is repeated when they are written.
    let mut inputs: Vec<PathBuf> = vec![args.model_yaml.clone()];
    match &selected {
        Selected::Models(yaml, entries) => {
            inputs.extend(entries.iter().map(|e| yaml.model_dir(e)));
        }
        Selected::Cases(zoo, picked) => inputs.extend(picked.iter().map(|c| zoo.run_dir(c))),
    }
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let outputs: Vec<(&str, &Path)> = [("--junit", &args.junit), ("--md", &args.md)]
        .into_iter()
        .filter_map(|(what, p)| p.as_deref().map(|p| (what, p)))
        .collect();
    modelzoo_support::check_output_paths(&outputs, &inputs)?;
    if selected.is_empty() {
        let why = match changed {
            Some(rev) => format!("no model directory has changes since `{rev}`"),
            None => format!("{} lists none", args.model_yaml.display()),
        };
        println!("modelzoo ci: nothing was checked: no model was selected ({why})");
        return Ok(ExitCode::from(1));
    }
    let work_dir = match args.work_dir {
        Some(d) => d,
        None => modelzoo_ci::new_work_dir()?,
    };
    eprintln!(
        "modelzoo ci: outputs and console logs in {}",
        work_dir.display()
    );
    // run_<model> binaries built next to this one are found first, then the kit's Python.
    let path_prefix = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()))
        .into_iter()
        .collect();
    let kit = Kit::locate();
    let sdaa = SdaaBackend::detect(kit.as_ref());
    let opts = modelzoo_ci::Options {
        device,
        jobs: args.jobs as usize,
        work_dir,
        path_prefix,
        kit,
        sdaa,
        kill_grace: Duration::from_secs(5),
        cancel: Arc::new(AtomicBool::new(false)),
        runs: args.runs as usize,
        baseline_device: args.baseline_device.clone(),
    };
    if opts.device == "sdaa" {
        eprintln!(
            "modelzoo ci: device {}: runs on {}",
            opts.device_label(),
            opts.sdaa.describe()
        );
    }
    // Ctrl-C / SIGTERM: the commands run in their own process groups and would not see it,
    // so stop them ourselves (their groups are killed) and report what ran.
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&opts.cancel))
            .context("cannot install the SIGINT/SIGTERM handler")?;
    }
    let results = match &selected {
        Selected::Models(yaml, entries) => modelzoo_ci::run_all(yaml, entries, &opts)?,
        Selected::Cases(zoo, picked) => {
            let timeout = args
                .timeout
                .map_or(cases::DEFAULT_TIMEOUT, Duration::from_secs);
            cases::run_all(zoo, picked, &opts, timeout)?
        }
    };
    print!("{}", modelzoo_ci::render_table(&results));
    if modelzoo_ci::repeat::asked(&opts) {
        // Across runs, a passing log stage carries the comparison's figures: show them too.
        for r in results
            .iter()
            .filter(|r| matches!(r.log, modelzoo_ci::Stage::Pass(_)))
        {
            if !r.log.detail().is_empty() {
                println!("{} across runs: {}", r.name, r.log.detail());
            }
        }
    }
    if let Some(path) = &args.junit {
        modelzoo_ci::write_report(path, &modelzoo_ci::render_junit(&results), &inputs)?;
    }
    if let Some(path) = &args.md {
        modelzoo_ci::write_report(path, &modelzoo_ci::render_markdown(&results), &inputs)?;
    }
    if opts.cancel.load(Ordering::SeqCst) {
        eprintln!("modelzoo ci: interrupted");
        return Ok(ExitCode::from(130));
    }
    if results.iter().any(|r| r.failed()) {
        return Ok(ExitCode::from(1));
    }
    // Skipped models do not fail the check, but a check in which every model was skipped
    // ran nothing, and must not look passed.
    if let Some(why) = modelzoo_ci::nothing_checked(&results) {
        println!("modelzoo ci: {why}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
