//! `run_vit`: the uniform ModelZoo command for the Vision Transformer case.

fn main() -> std::process::ExitCode {
    modelzoo_engine::app::main(modelzoo_vit::recipe::ViTRecipe)
}
