//! `run_gpt`: the uniform ModelZoo command for the GPT case. Thin: parse the arguments
//! generated from the spec, then hand over to `modelzoo_gpt::run`.

use std::process::ExitCode;

use modelzoo_gpt::run::{self, ABOUT};
use run_scripts_template::ResolvedArgs;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let spec = match run::spec() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let args = match ResolvedArgs::parse_from("run_gpt", ABOUT, &spec, std::env::args_os()) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    if args.flag("print_cmd") {
        print!("{}", args.to_command_line());
        return ExitCode::SUCCESS;
    }
    match run::run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            // Bad input exits 2; a run that started and failed exits 1.
            if e.downcast_ref::<run::TrainingFailed>().is_some() {
                ExitCode::from(1)
            } else {
                ExitCode::from(2)
            }
        }
    }
}
