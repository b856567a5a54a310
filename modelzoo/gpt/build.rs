// Generates run_gpt's argument spec at build time: the ModelZoo standard spec merged with
// spec.yaml, checked (a bad spec fails the build with a message naming the file), written to
// OUT_DIR and embedded by src/cli.rs. Also bakes the libtorch rpath (build-support/rpath.rs).
fn main() {
    println!("cargo:rerun-if-changed=spec.yaml");
    println!("cargo:rerun-if-changed=../../run_scripts-template/spec/standard.yaml");
    let Some(out) = std::env::var_os("OUT_DIR") else {
        eprintln!("error: cargo did not set OUT_DIR");
        std::process::exit(1);
    };
    if let Err(e) = run_scripts_template::codegen::generate_merged_spec(
        "run_gpt",
        std::path::Path::new("spec.yaml"),
        std::path::Path::new(&out),
    ) {
        eprintln!("error: {e}");
        println!("cargo:warning=invalid argument spec: {e}");
        std::process::exit(1);
    }
    rpath::emit();
}

mod rpath {
    include!("../../build-support/rpath.rs");
    pub(super) fn emit() {
        main()
    }
}
