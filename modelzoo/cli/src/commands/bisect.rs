//! `modelzoo bisect --baseline LOG -- CMD...`: find the ops whose CPU fallback
//! (`TORCH_SDAA_FALLBACK_OPS`) makes a device run match its baseline (modelzoo_port::bisect).
//! Exit 0: a set found (printed with the environment line to use); 1: nothing to bisect (the
//! run matches already), a device-only bug in the script itself, or no set within the budget;
//! 2: could not run; 130: interrupted.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use modelzoo_port::bisect::{self, BisectError, Options, Rule};
use modelzoo_support::kit::Kit;

#[derive(clap::Args)]
pub struct Args {
    /// The baseline's log: the run to match (an fp32 CPU run for the step rule).
    #[arg(long, value_name = "LOG")]
    baseline: PathBuf,
    /// step: every step within float noise of the baseline (an fp32 CPU baseline on the
    /// emulator); rel1: the 1% rule on the final loss. Default: step when the baseline's log
    /// says device cpu and fp32 (or says neither), else rel1.
    #[arg(long, value_parser = ["step", "rel1"])]
    rule: Option<String>,
    /// Stop after this many runs with the best set so far.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    max_runs: Option<u64>,
    /// Stop starting runs after this many seconds, with the best set so far.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=604_800))]
    time_budget: Option<u64>,
    /// A directory copied into each run's fresh directory, where the command runs (without
    /// it, each run starts in an empty directory: give the script's path absolute).
    #[arg(long, value_name = "DIR")]
    src: Option<PathBuf>,
    /// Where the runs, their consoles and bisect.json go.
    #[arg(long, value_name = "DIR", default_value = ".modelzoo-port/bisect")]
    work_dir: PathBuf,
    /// The log file the command writes (relative to the directory it runs in), when its losses
    /// are not in its console output.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// The loss to judge when the log prints several: its metric name.
    #[arg(long, value_name = "NAME")]
    loss_key: Option<String>,
    /// Seconds each run may take.
    #[arg(long, default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
    /// The command, after `--`, run as is on the device (no shell; `python` is the kit's .venv
    /// python when `make setup` made one).
    #[arg(last = true, value_name = "CMD", required = true)]
    command: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cancel = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&cancel))
            .context("cannot install the SIGINT/SIGTERM handler")?;
    }
    let opts = Options {
        baseline: args.baseline,
        command: args.command,
        rule: args.rule.as_deref().map(|r| match r {
            "step" => Rule::Step,
            _ => Rule::Rel1,
        }),
        max_runs: args.max_runs.map(|n| n as usize),
        time_budget: args.time_budget.map(Duration::from_secs),
        src: args.src,
        work: args.work_dir,
        log: args.log,
        loss_key: args.loss_key,
        timeout: Duration::from_secs(args.timeout),
        kit: Kit::locate(),
        extra_env: Vec::new(),
    };
    match bisect::run(&opts, &cancel) {
        Ok(report) => {
            println!("bisect ({}): {}", report.rule.name(), report.summary);
            println!("report: {}", opts.work.join(bisect::JSON_FILE).display());
            Ok(ExitCode::from(report.exit_code()))
        }
        Err(BisectError::Interrupted) => {
            eprintln!("bisect: interrupted");
            Ok(ExitCode::from(130))
        }
        Err(BisectError::Port(e)) => Err(e.into()),
    }
}
