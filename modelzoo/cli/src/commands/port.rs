//! `modelzoo port SRC --out DST -- CMD...`: migrate a CUDA PyTorch project, run the original
//! (CUDA, else the CPU) and the port (SDAA, else the emulator) with the same command, compare
//! their losses with the 1% rule, and write DST/PORT.md and DST/port.json. Exit 0 when the port
//! ran to the end on sdaa and matches; 1 when it crashed or drifted; 2 for unusable input
//! (including an original that does not run, or prints no loss); 130 when interrupted.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use modelzoo_port::{BaselineDevice, Options};
use modelzoo_support::kit::Kit;

#[derive(clap::Args)]
pub struct Args {
    /// The CUDA project to port (the directory the command runs in).
    src: PathBuf,
    /// Where the migrated project goes: a new or empty directory.
    #[arg(long, value_name = "DST")]
    out: PathBuf,
    /// Where the original runs: cuda (needs a GPU) or cpu (its CUDA calls mapped to the CPU).
    /// Default: cuda when this machine has an NVIDIA GPU, else cpu.
    #[arg(long, value_parser = ["cpu", "cuda"])]
    baseline_device: Option<String>,
    /// Seconds each run may take.
    #[arg(long, default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
    /// The log file the command writes (relative to the directory it runs in), when its losses
    /// are not in its console output.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// The training command, after `--`, run as is in SRC and in DST (no shell; `python` is the
    /// kit's .venv python when `make setup` made one).
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let baseline_device = match args.baseline_device.as_deref() {
        Some("cuda") => BaselineDevice::Cuda,
        Some(_) => BaselineDevice::Cpu,
        None => BaselineDevice::detect(),
    };
    let opts = Options {
        src: args.src,
        out: args.out,
        baseline_device,
        timeout: Duration::from_secs(args.timeout),
        log: args.log,
        command: args.command,
        kit: Kit::locate(),
    };
    let cancel = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&cancel))
            .context("cannot install the SIGINT/SIGTERM handler")?;
    }
    let port = modelzoo_port::run(&opts, &cancel)?;
    println!("{}", port.summary);
    println!(
        "report: {}",
        port.out.join(modelzoo_port::MARKDOWN_FILE).display()
    );
    Ok(ExitCode::from(port.exit_code))
}
