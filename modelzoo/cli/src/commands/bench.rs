//! `modelzoo bench`: FlagPerf standard cases over the zoo's `run_<model>` binaries — layered
//! case configs, `finished_info.json` per round, results.md / .json / .csv and p_whole.svg.
//! Exit 0 every round succeeded, 1 a round failed, 2 bad input (nothing ran), 130 interrupted.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    /// Case keys, FlagPerf's `model:framework:hardware:nnodes:nproc:repeat`
    /// (e.g. resnet:rust-tch:cpu:1:2:3), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "KEY[,KEY...]",
        required_unless_present = "test_conf"
    )]
    cases: Vec<String>,
    /// A test_conf YAML: `cases: {KEY: dataset path}` and optional `overrides: {key: value}`.
    #[arg(long, value_name = "FILE")]
    test_conf: Option<PathBuf>,
    /// Where each round's folder and the results go.
    #[arg(long, value_name = "DIR", default_value = "bench-results")]
    work_dir: PathBuf,
    /// Override a case parameter, the test_conf layer (repeatable): -o batch_size=16.
    /// Only the case's mutable_params may be overridden.
    #[arg(short = 'o', long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// The case configs (hardware.yaml, benchmarks/, vendor folders).
    #[arg(long, value_name = "DIR", default_value = "modelzoo/bench/cases")]
    cases_dir: PathBuf,
    /// A round running longer than this many seconds is killed and recorded as failed.
    #[arg(long, value_name = "SECS", default_value_t = 7200)]
    timeout: u64,
    /// Print each case's resolved parameters (and the layer each came from) and its commands;
    /// run nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // run_<model> binaries built next to this one are found first.
    let path_prefix = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()))
        .into_iter()
        .collect();
    let opts = modelzoo_bench::Options {
        cases: args.cases,
        test_conf: args.test_conf,
        overrides: args.overrides,
        work_dir: args.work_dir,
        cases_dir: args.cases_dir,
        cwd: std::env::current_dir().context("cannot read the current directory")?,
        path_prefix,
        timeout: Duration::from_secs(args.timeout.max(1)),
        dry_run: args.dry_run,
    };
    let plan = match modelzoo_bench::plan(&opts) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(e.exit_code()));
        }
    };
    if opts.dry_run {
        print!("{}", modelzoo_bench::describe(&plan, &opts.work_dir));
        return Ok(ExitCode::SUCCESS);
    }
    let cancel = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&cancel))
            .context("cannot install the SIGINT/SIGTERM handler")?;
    }
    let command: Vec<String> = std::env::args().collect();
    let outcome = modelzoo_bench::run(&plan, &opts, &command.join(" "), &cancel)?;
    for c in &outcome.cases {
        let p = c.stat("p_whole").map_or("–".to_string(), |s| {
            format!("{:.2} {}/s", s.mean, c.items_unit)
        });
        println!(
            "{}: {}/{} rounds ok, p_whole {p}",
            c.case,
            c.rounds.len() - c.failed_rounds(),
            c.rounds.len()
        );
    }
    for path in &outcome.written {
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::from(outcome.exit_code()))
}
