//! `run_gpt`: the uniform ModelZoo command for the GPT case. Thin: parse the arguments
//! generated from the spec, then hand over to `modelzoo_gpt::run`.

use std::process::ExitCode;

use modelzoo_engine::runner;
use modelzoo_gpt::run::{self, ABOUT};

fn main() -> ExitCode {
    let args = match runner::start("run_gpt", ABOUT, run::spec()) {
        Ok(args) => args,
        Err(code) => return code,
    };
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
