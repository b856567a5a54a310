// Generates run_bert's argument spec at build time: the ModelZoo standard spec merged with
// spec.yaml, checked and written to OUT_DIR (embedded by src/recipe.rs, typed in src/args.rs); a
// bad spec fails the build.
// Also bakes the libtorch rpath (build-support/rpath.rs).
fn main() {
    run_scripts_template::codegen::run_build_script("run_bert");
    rpath::emit();
}

mod rpath {
    include!("../../build-support/rpath.rs");
    pub(super) fn emit() {
        main()
    }
}
