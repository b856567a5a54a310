//! `run_{{name}}`: the uniform ModelZoo command for {{title}}.

use std::process::ExitCode;

use run_scripts_template::{ArgSpec, ResolvedArgs};

/// The standard arguments merged with spec.yaml by build.rs.
const SPEC: &str = include_str!(concat!(env!("OUT_DIR"), "/run_args.yaml"));

fn main() -> ExitCode {
    let spec = match ArgSpec::from_yaml(SPEC, "run_{{name}} (embedded spec)") {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let args = match ResolvedArgs::parse_from("run_{{name}}", "{{title}}", &spec, std::env::args_os()) {
        Ok(args) => args,
        Err(e) => e.exit(),
    };
    if args.flag("print_cmd") {
        println!("{}", args.to_command_line());
        return ExitCode::SUCCESS;
    }
    // TODO: build the model as a modelzoo_engine BasicModule, train it with Engine::fit for
    // `--step` steps on `--device`, and log train.loss / train.ips (and eval metrics) through
    // dllogger into `--output_dir` — see modelzoo/resnet for a complete case.
    eprintln!("run_{{name}}: the training loop is not written yet (see src/main.rs)");
    ExitCode::from(2)
}
