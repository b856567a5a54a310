//! `modelzoo`: the adapter's toolbox around the zoo — layout checks, SDAA-vs-CUDA precision
//! reports, op-level precision diffs, environment report, the PR functional check,
//! scaffolding, CUDA→SDAA migration, the porter's loop (migrate, run both sides, compare) and
//! FlagPerf standard-case benchmarks.
//!
//! A thin binary: each subcommand parses its arguments and calls a library.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;

#[derive(Parser)]
#[command(name = "modelzoo", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check model directories against the ModelZoo layout rules.
    Validate(commands::validate::Args),
    /// Compare a candidate (SDAA) training log against a baseline (CUDA) log.
    Compare(commands::compare::Args),
    /// Diff two dumps of one training step op by op and name the first divergence.
    Diff(commands::diff::Args),
    /// Print the device environment (PyTorch, SDAA libraries, CPU, CUDA).
    Env(commands::env::Args),
    /// Run the PR functional check on the zoo's models.
    Ci(commands::ci::Args),
    /// Scaffold a new model directory in ModelZoo shape.
    New(commands::new::Args),
    /// Port a PyTorch model directory from CUDA to SDAA (dry run by default).
    Migrate(commands::migrate::Args),
    /// Run FlagPerf standard cases and write finished_info and the results table.
    Bench(commands::bench::Args),
    /// Migrate a CUDA project, run it and its port side by side (SDAA, or the emulator) and
    /// compare them.
    Port(commands::port::Args),
    /// Custom ops: check an implementation against a float64 reference (`op check`).
    Op(commands::op::Args),
    /// Find the ops whose CPU fallback (TORCH_SDAA_FALLBACK_OPS) makes a device run match its
    /// baseline.
    Bisect(commands::bisect::Args),
}

fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Validate(args) => commands::validate::run(args),
        Command::Compare(args) => commands::compare::run(args),
        Command::Diff(args) => commands::diff::run(args),
        Command::Env(args) => commands::env::run(args),
        Command::Ci(args) => commands::ci::run(args),
        Command::New(args) => commands::new::run(args),
        Command::Migrate(args) => commands::migrate::run(args),
        Command::Bench(args) => commands::bench::run(args),
        Command::Port(args) => commands::port::run(args),
        Command::Op(args) => commands::op::run(args),
        Command::Bisect(args) => commands::bisect::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Diagnostics go to stderr through `tracing` (`RUST_LOG` honoured), never into metric lines.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
