// Merges the ModelZoo standard argument spec with spec.yaml at build time (a bad spec fails
// the build with a message naming the file) and embeds the result in run_{{name}}.
fn main() {
    println!("cargo:rerun-if-changed=spec.yaml");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    if let Err(e) = run_scripts_template::codegen::generate_merged_spec(
        "run_{{name}}",
        std::path::Path::new("spec.yaml"),
        &out,
    ) {
        println!("cargo:warning=invalid argument spec: {e}");
        std::process::exit(1);
    }
}
