//! `run_bert`: the uniform ModelZoo command for the BERT case.

fn main() -> std::process::ExitCode {
    modelzoo_engine::app::main(modelzoo_bert::recipe::BertRecipe)
}
