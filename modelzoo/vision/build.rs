// The libtorch run path (as every crate that links libtorch), then csrc/jpeg_region.c: the
// region decode on libjpeg-turbo's libjpeg API (Debian libjpeg62-turbo-dev, found through
// pkg-config as `libjpeg`; scripts/setup.sh installs it).
mod rpath {
    include!("../../build-support/rpath.rs");
}

fn main() {
    rpath::main();
    println!("cargo:rerun-if-changed=csrc/jpeg_region.c");
    let jpeg = pkg_config::Config::new()
        .cargo_metadata(true)
        .probe("libjpeg")
        .unwrap_or_else(|e| {
            panic!(
                "libjpeg (libjpeg-turbo's libjpeg API) not found through pkg-config: {e}\n\
                 install it (apt-get install libjpeg-dev, or run scripts/setup.sh), then rebuild"
            )
        });
    cc::Build::new()
        .file("csrc/jpeg_region.c")
        .includes(&jpeg.include_paths)
        .warnings(true)
        .compile("mz_jpeg_region");
}
