// Merges the ModelZoo standard argument spec with spec.yaml at build time (a bad spec fails
// the build with a message naming the file), embeds the result in run_{{name}} and generates
// its typed `ModelArgs` (src/args.rs). Also bakes the libtorch rpath (build-support/rpath.rs).
fn main() {
    run_scripts_template::codegen::run_build_script("run_{{name}}");
    rpath::emit();
}

mod rpath {
    include!("../../build-support/rpath.rs");
    pub(super) fn emit() {
        main()
    }
}
