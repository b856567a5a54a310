//! Logs a short synthetic training run the way a ModelZoo model does: METADATA, five train
//! steps (`train.loss`, `train.ips`), one eval (`val.top1`), to stdout (tcap `TCAPPDLL` lines)
//! and to a JSON stream, then reads the JSON stream back with the reader.
//!
//! Usage: dllogger_demo --json <path>

use std::path::PathBuf;
use std::process::ExitCode;

use dllogger::{JsonStreamBackend, Logger, Metadata, StdOutBackend, Verbosity};

fn parse_args() -> Result<PathBuf, String> {
    let mut args = std::env::args().skip(1);
    let mut json = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => json = Some(args.next().ok_or("--json needs a path")?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    json.map(PathBuf::from)
        .ok_or_else(|| "missing --json <path>".to_owned())
}

fn run(json: PathBuf) -> Result<(), String> {
    if let Some(dir) = json.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create directory {}: {e}", dir.display()))?;
    }
    let backend =
        JsonStreamBackend::create(Verbosity::Verbose, &json).map_err(|e| e.to_string())?;
    let mut log = Logger::new(vec![
        Box::new(StdOutBackend::new(Verbosity::Default)),
        Box::new(backend),
    ]);
    log.metadata(
        "train.loss",
        Metadata::new()
            .with_unit("")
            .with_goal("MINIMIZE")
            .with_stage("TRAIN"),
    );
    log.metadata(
        "train.ips",
        Metadata::new()
            .with_unit("imgs/s")
            .with_format(":.3f")
            .with_goal("MAXIMIZE")
            .with_stage("TRAIN"),
    );
    log.metadata(
        "val.top1",
        Metadata::new()
            .with_unit("%")
            .with_goal("MAXIMIZE")
            .with_stage("EVAL"),
    );
    for it in 0..5u64 {
        // Deterministic synthetic values, not a training result.
        let loss = 2.5 * (-0.3 * it as f64).exp() + 0.1;
        let ips = 1000.0 + 50.0 * it as f64;
        log.log(
            (0, it),
            &[("train.loss", loss.into()), ("train.ips", ips.into())],
            Verbosity::Default,
        );
    }
    log.log((0, 5, 1), &[("val.top1", 12.5.into())], Verbosity::Default);
    log.finish()
        .map_err(|e| format!("writing {}: {e}", json.display()))?;

    let mut reader = dllogger::open(&json).map_err(|e| e.to_string())?;
    let n = reader.by_ref().count();
    if let Some(e) = reader.error() {
        return Err(format!("reading back {}: {e}", json.display()));
    }
    let s = reader.stats();
    eprintln!(
        "read back {}: {n} records, {} metadata lines, {} malformed",
        json.display(),
        s.metadata,
        s.malformed
    );
    Ok(())
}

fn main() -> ExitCode {
    let json = match parse_args() {
        Ok(p) => p,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("error: {msg}");
            }
            eprintln!("usage: dllogger_demo --json <path>");
            return ExitCode::from(2);
        }
    };
    match run(json) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
