//! `run_{{name}}`: the uniform ModelZoo command for {{title}}.

fn main() -> std::process::ExitCode {
    modelzoo_engine::app::main(modelzoo_{{name}}::recipe::Recipe{{Camel}})
}
