//! `run_resnet`: the uniform ModelZoo command for the ResNet case.

fn main() {
    eprintln!("run_resnet: not implemented yet");
    std::process::exit(2);
}
