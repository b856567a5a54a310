// Generates run_resnet's argument spec at build time: the ModelZoo standard spec merged with
// spec.yaml, checked (a bad spec fails the build with a message naming the file), written to
// OUT_DIR and embedded by src/args.rs. Also bakes the libtorch rpath (build-support/rpath.rs).
fn main() {
    println!("cargo:rerun-if-changed=spec.yaml");
    println!("cargo:rerun-if-changed=../../run_scripts-template/spec/standard.yaml");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    if let Err(e) = run_scripts_template::codegen::generate_merged_spec(
        "run_resnet",
        std::path::Path::new("spec.yaml"),
        &out,
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
