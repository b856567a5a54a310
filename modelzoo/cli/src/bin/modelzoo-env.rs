//! `modelzoo-env` — the device environment report behind `modelzoo env`: the table torch_sdaa
//! prints at import (Host IP, PyTorch, Torch-SDAA, SDAA Driver/Runtime, SDPTI, TecoDNN,
//! TecoBLAS, CustomDNN, TecoRAND, TCCL — each `version (library path)` or `N/A`), then CPU and
//! CUDA rows.
//!
//! A binary of its own so that only it links libtorch: every other `modelzoo` command starts
//! without loading it. `modelzoo env ARGS` runs this binary with ARGS.
//!
//! Exit codes: 0 the report was printed (even when only the CPU is there); 2 `--device` was
//! given and that device could not be opened (the message says why).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use device_sdaa::{env_report, Device, DeviceSpec, OpenOptions};

#[derive(clap::Parser)]
#[command(
    name = "modelzoo env",
    bin_name = "modelzoo env",
    about = "Print the device environment (PyTorch, SDAA libraries, CPU, CUDA)"
)]
struct Args {
    /// Print the same facts as one JSON object.
    #[arg(long)]
    json: bool,
    /// The SDAA torch plugin library (overrides SDAA_TORCH_PLUGIN and the search).
    #[arg(long = "sdaa_plugin", alias = "sdaa-plugin", value_name = "PATH")]
    sdaa_plugin: Option<PathBuf>,
    /// Also open this device (cpu, cuda, cuda:N, sdaa, sdaa:N) and check it works.
    #[arg(long, value_name = "DEVICE")]
    device: Option<DeviceSpec>,
}

/// What `--device` adds to the report.
#[derive(serde::Serialize)]
struct Opened {
    device: String,
    name: String,
    process_group_backend: &'static str,
    memory: Option<device_sdaa::MemoryInfo>,
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    let opts = OpenOptions {
        sdaa_plugin: args.sdaa_plugin,
    };
    let opened = match args.device {
        Some(spec) => {
            let device = Device::open_with(spec, &opts)
                .with_context(|| format!("cannot open --device {spec}"))?;
            device
                .self_test()
                .with_context(|| format!("--device {spec} opened but does not work"))?;
            Some(Opened {
                device: spec.to_string(),
                name: device.name(),
                process_group_backend: device.process_group_backend(),
                memory: device.memory_info(),
            })
        }
        None => None,
    };
    let report = env_report(&opts);
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        if let (Some(o), Some(map)) = (&opened, value.as_object_mut()) {
            map.insert("opened_device".into(), serde_json::to_value(o)?);
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print!("{report}");
        if let Some(o) = opened {
            let memory = o.memory.map_or(String::new(), |m| {
                format!(", {} of {} MiB free", m.free >> 20, m.total >> 20)
            });
            println!(
                "opened {}: {} (process group backend {}{memory})",
                o.device, o.name, o.process_group_backend
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(<Args as clap::Parser>::parse()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
