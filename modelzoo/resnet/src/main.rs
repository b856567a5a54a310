//! `run_resnet`: the uniform ModelZoo command for the ResNet case. Thin: parse the arguments
//! generated from the spec, then hand over to `modelzoo_resnet::run`.

use std::process::ExitCode;

use modelzoo_resnet::run::{self, ABOUT};
use run_scripts_template::ResolvedArgs;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    // tch reports libtorch errors as panics; `run` catches them and prints the message as an
    // error line, so the hook only notes where (RUST_LOG=debug shows the full text).
    std::panic::set_hook(Box::new(|info| {
        tracing::debug!("{info}");
        if let Some(loc) = info.location() {
            eprintln!("run_resnet: libtorch error raised at {loc}");
        }
    }));
    let spec = match run::spec() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let args = match ResolvedArgs::parse_from("run_resnet", ABOUT, &spec, std::env::args_os()) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    if args.flag("print_cmd") {
        print!("{}", args.to_command_line());
        return ExitCode::SUCCESS;
    }
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
