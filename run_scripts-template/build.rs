// Generates `StandardArgs`, the typed struct of spec/standard.yaml, into OUT_DIR (included by
// src/lib.rs): the same generator each model crate's build.rs runs for its own arguments.
#[allow(dead_code)]
#[path = "src/spec.rs"]
mod spec;
#[allow(dead_code)]
#[path = "src/typed.rs"]
mod typed;

fn main() {
    println!("cargo:rerun-if-changed=spec/standard.yaml");
    println!("cargo:rerun-if-changed=src/spec.rs");
    println!("cargo:rerun-if-changed=src/typed.rs");
    let source = typed::struct_source(
        "StandardArgs",
        "The ModelZoo standard arguments (spec/standard.yaml) of every `run_<model>`, typed.",
        &spec::ArgSpec::standard().args,
        "crate",
    );
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("standard_args.rs"), source).expect("write standard_args.rs");
}
