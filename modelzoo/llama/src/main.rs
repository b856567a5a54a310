//! `run_llama`: the uniform ModelZoo command for the LLaMA case.

fn main() -> std::process::ExitCode {
    modelzoo_engine::app::main(modelzoo_llama::recipe::LlamaRecipe)
}
