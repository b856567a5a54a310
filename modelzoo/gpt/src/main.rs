//! `run_gpt`: the uniform ModelZoo command for the GPT case.

fn main() -> std::process::ExitCode {
    modelzoo_engine::app::main(modelzoo_gpt::recipe::GptRecipe)
}
