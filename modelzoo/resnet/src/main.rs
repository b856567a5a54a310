//! `run_resnet`: the uniform ModelZoo command for the ResNet case.

fn main() -> std::process::ExitCode {
    modelzoo_engine::app::main(modelzoo_resnet::recipe::ResNetRecipe)
}
