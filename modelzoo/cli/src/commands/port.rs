//! `modelzoo port SRC --out DST -- CMD...`: migrate a CUDA PyTorch project, run the original
//! (CUDA, else the CPU, twice) and the port (SDAA, else the emulator) with the same command,
//! each in a fresh copy, judge the port's losses (step by step against an fp32 CPU baseline,
//! else the 1% rule), and write DST/PORT.md and DST/port.json. `modelzoo port --recheck DST`
//! runs and judges an edited port again. Exit 0 when the port ran to the end on sdaa and
//! matches; 1 when it failed (crashed, drifted, nothing on sdaa, no comparable loss); 2 when it
//! could not be judged (unusable input, an original that does not run, is not reproducible or
//! prints no loss, the kit's CPU baseline failed); 130 when interrupted. `--runs N` runs each
//! side N times and judges across the runs (an original that is not reproducible included).

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
    /// The CUDA project to port (the directory the command runs in; never written: every run
    /// happens in a copy).
    #[arg(required_unless_present = "recheck")]
    src: Option<PathBuf>,
    /// Where the migrated project goes: a new or empty directory.
    #[arg(long, value_name = "DST", required_unless_present = "recheck")]
    out: Option<PathBuf>,
    /// Run and judge an edited port again: the --out directory of an earlier port, with the
    /// command, loss key, timeout and original's runs it saved (nothing is migrated again).
    #[arg(long, value_name = "DST", conflicts_with_all = ["src", "out", "baseline_device", "log", "loss_key", "baseline_log", "command"])]
    recheck: Option<PathBuf>,
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
    /// The loss to judge when the log prints several (e.g. `Loss_D`): its metric name.
    #[arg(long, value_name = "NAME")]
    loss_key: Option<String>,
    /// The log of a real CUDA run of the same command: the original is not run here, and the
    /// port is judged against this log by the 1% rule.
    #[arg(long, value_name = "FILE")]
    baseline_log: Option<PathBuf>,
    /// After a port whose losses drift from the original's, run `modelzoo bisect` on it: the
    /// ops whose CPU fallback (TORCH_SDAA_FALLBACK_OPS) make it match (docs/bisect.md).
    #[arg(long, conflicts_with = "recheck")]
    bisect: bool,
    /// Route a custom-op wrapper of the port (a `torch.autograd.Function` calling the project's
    /// C++/CUDA extension, as `modelzoo migrate` lists them) to an implementation that runs on
    /// the device: CLASS=module:function (repeatable; docs/op.md).
    #[arg(long = "op", value_name = "CLASS=MOD:FN", conflicts_with = "recheck")]
    ops: Vec<modelzoo_port::ops::OpRoute>,
    /// Route the original's wrapper (default: the project's pure-PyTorch twin of it, when it
    /// has one): CLASS=module:function (repeatable).
    #[arg(
        long = "baseline-op",
        value_name = "CLASS=MOD:FN",
        conflicts_with = "recheck"
    )]
    baseline_ops: Vec<modelzoo_port::ops::OpRoute>,
    /// Run the original and the port N times each (each run in a fresh copy, the same
    /// command) and judge across the runs too: Welch's one-sided t-test on the final loss with
    /// 3 or more (docs/port.md, "Several runs a side"). 1: one run a side.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with_all = ["recheck", "bisect"])]
    runs: usize,
    /// Seed torch, Python's `random` and numpy with N in every run, original and port, right
    /// after torch is imported (for a script that seeds nothing; one that seeds itself later
    /// still wins). `--recheck` keeps it.
    #[arg(long, value_name = "N", conflicts_with = "recheck")]
    seed: Option<u32>,
    /// The training command, after `--`, run as is in SRC and in DST (no shell; `python` is the
    /// kit's .venv python when `make setup` made one).
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cancel = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&cancel))
            .context("cannot install the SIGINT/SIGTERM handler")?;
    }
    let port = if let Some(dst) = &args.recheck {
        modelzoo_port::recheck(dst, Kit::locate(), &cancel)?
    } else {
        let (Some(src), Some(out)) = (args.src, args.out) else {
            anyhow::bail!("give the project and --out DST, or --recheck DST");
        };
        let baseline_device = match args.baseline_device.as_deref() {
            Some("cuda") => BaselineDevice::Cuda,
            Some(_) => BaselineDevice::Cpu,
            None => BaselineDevice::detect(),
        };
        let opts = Options {
            src,
            out,
            baseline_device,
            timeout: Duration::from_secs(args.timeout),
            log: args.log.clone(),
            loss_key: args.loss_key.clone(),
            baseline_log: args.baseline_log,
            command: args.command,
            kit: Kit::locate(),
            ops: args.ops,
            baseline_ops: args.baseline_ops,
            runs: args.runs,
            seed: args.seed,
        };
        modelzoo_port::run(&opts, &cancel)?
    };
    println!("{}", port.summary);
    println!(
        "report: {}",
        port.out.join(modelzoo_port::MARKDOWN_FILE).display()
    );
    if args.bisect {
        let timeout = Duration::from_secs(args.timeout);
        match modelzoo_port::bisect::after_port(
            &port,
            args.log,
            args.loss_key,
            timeout,
            Kit::locate(),
            &cancel,
        ) {
            None => println!("bisect: not run (the port did not drift: no fallback to look for)"),
            Some(Ok(report)) => {
                println!("bisect ({}): {}", report.rule.name(), report.summary);
                println!(
                    "bisect report: {}",
                    port.out
                        .join(modelzoo_port::WORK_DIR)
                        .join("bisect")
                        .join(modelzoo_port::bisect::JSON_FILE)
                        .display()
                );
            }
            Some(Err(modelzoo_port::bisect::BisectError::Interrupted)) => {
                return Ok(ExitCode::from(130))
            }
            Some(Err(e)) => eprintln!("bisect: could not run: {e}"),
        }
    }
    Ok(ExitCode::from(port.exit_code))
}
