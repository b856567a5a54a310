// Builds the C++ shim (csrc/shim.cpp) against the libtorch that torch-sys linked, and bakes
// that libtorch's directory into the run path (build-support/rpath.rs).
mod rpath {
    include!("../build-support/rpath.rs");
    pub fn bake() {
        main()
    }
}

fn main() {
    rpath::bake();
    println!("cargo:rerun-if-changed=csrc/shim.cpp");
    let lib = match std::env::var("DEP_TCH_LIBTORCH_LIB") {
        Ok(lib) => std::path::PathBuf::from(lib),
        Err(_) => panic!(
            "torch-sys did not report DEP_TCH_LIBTORCH_LIB; set LIBTORCH or LIBTORCH_USE_PYTORCH=1"
        ),
    };
    let include = lib.join("../include");
    cc::Build::new()
        .cpp(true)
        .file("csrc/shim.cpp")
        .include(&include)
        .include(include.join("torch/csrc/api/include"))
        .flag("-std=c++17")
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        .flag_if_supported("-Wno-unused-parameter")
        .warnings(false)
        .compile("modelzoo_device_shim");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib=torch_cpu");
    println!("cargo:rustc-link-lib=dylib=c10");
}
