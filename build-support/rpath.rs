// Shared by the build scripts of every crate that links libtorch: bake the libtorch library
// directory into the binaries' (and test binaries') run path, so `target/release/<bin>` runs
// without LD_LIBRARY_PATH. torch-sys (`links = "tch"`) reports the directory it linked against
// as DEP_TCH_LIBTORCH_LIB to crates that depend on it directly. `pub` so a build script with
// more to do can include it in a module and call it.
pub fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
    }
}
