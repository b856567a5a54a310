//! `run_resnet`: the uniform ModelZoo command for the ResNet case. Thin: parse the arguments
//! generated from the spec, then hand over to `modelzoo_resnet::run`.

use std::process::ExitCode;

use modelzoo_engine::runner;
use modelzoo_resnet::run::{self, ABOUT};

fn main() -> ExitCode {
    let args = match runner::start("run_resnet", ABOUT, run::spec()) {
        Ok(args) => args,
        Err(code) => return code,
    };
    // tch reports libtorch errors as panics; `run` catches them and prints the message as an
    // error line, so the hook only notes where (RUST_LOG=debug shows the full text).
    std::panic::set_hook(Box::new(|info| {
        tracing::debug!("{info}");
        if let Some(loc) = info.location() {
            eprintln!("run_resnet: libtorch error raised at {loc}");
        }
    }));
    match run::run(&args) {
        Ok(summary) if summary.interrupted => {
            eprintln!(
                "run_resnet: interrupted; saved step {} to {}",
                summary.steps,
                summary
                    .last_checkpoint
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            );
            ExitCode::from(130)
        }
        Ok(summary) => {
            let metrics: Vec<String> = summary
                .last_eval
                .iter()
                .map(|(k, v)| format!("{k} {v:.4}"))
                .collect();
            eprintln!(
                "run_resnet: done, {} steps; {}",
                summary.steps,
                metrics.join(", ")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
