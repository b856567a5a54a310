// Builds the C++ shim (csrc/shim.cpp, csrc/dist.cpp, csrc/capture.cpp, csrc/recompute.cpp,
// csrc/optim.cpp, csrc/bn_act.cpp) against the libtorch that torch-sys
// linked, and bakes that libtorch's directory into the run path (build-support/rpath.rs).
// Also builds the NCCL shim, a separate shared library that src/nccl.rs embeds (see
// `nccl_shim`). With the `bindgen` feature, also generates the SDK declarations from
// $SDAA_HOME/include (see `sdk_bindings`).
mod rpath {
    include!("../build-support/rpath.rs");
    pub fn bake() {
        main()
    }
}

fn main() {
    rpath::bake();
    #[cfg(feature = "bindgen")]
    sdk_bindings::generate();
    println!("cargo:rerun-if-changed=csrc/shim.cpp");
    println!("cargo:rerun-if-changed=csrc/dist.cpp");
    println!("cargo:rerun-if-changed=csrc/capture.cpp");
    println!("cargo:rerun-if-changed=csrc/recompute.cpp");
    println!("cargo:rerun-if-changed=csrc/optim.cpp");
    println!("cargo:rerun-if-changed=csrc/bn_act.cpp");
    println!("cargo:rerun-if-changed=csrc/protect.h");
    println!("cargo:rerun-if-changed=csrc/handles.h");
    println!("cargo:rerun-if-env-changed=GLOO_INCLUDE_DIR");
    let lib = match std::env::var("DEP_TCH_LIBTORCH_LIB") {
        Ok(lib) => std::path::PathBuf::from(lib),
        Err(_) => panic!(
            "torch-sys did not report DEP_TCH_LIBTORCH_LIB; set LIBTORCH or LIBTORCH_USE_PYTORCH=1"
        ),
    };
    let include = lib.join("../include");
    let mut build = cc::Build::new();
    // ProcessGroupGloo's header needs gloo's (Debian libgloo-dev; `make setup` installs it).
    // Without them the shim still builds, and asking for a Gloo group says what to install.
    let gloo = std::env::var_os("GLOO_INCLUDE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/usr/include".into());
    println!(
        "cargo:rerun-if-changed={}",
        gloo.join("gloo/config.h").display()
    );
    if gloo.join("gloo/config.h").is_file() {
        // -I/usr/include would reorder the system headers (libstdc++'s #include_next).
        if gloo != std::path::Path::new("/usr/include") {
            build.include(&gloo);
        }
        build.define("USE_C10D_GLOO", None);
    } else {
        println!(
            "cargo:warning=gloo headers not found under {} (set GLOO_INCLUDE_DIR or apt-get install libgloo-dev): DDP on the CPU will be unavailable",
            gloo.display()
        );
    }
    build
        .cpp(true)
        .file("csrc/shim.cpp")
        .file("csrc/dist.cpp")
        .file("csrc/capture.cpp")
        .file("csrc/recompute.cpp")
        .file("csrc/optim.cpp")
        .file("csrc/bn_act.cpp")
        .include(&include)
        .include(include.join("torch/csrc/api/include"))
        .flag("-std=c++17")
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        // As the release libtorch was built: headers such as ATen/record_function.h add
        // members and debug-only checks without NDEBUG, which would not match the library.
        .define("NDEBUG", None)
        // at::parallel_for is inline: without OpenMP it would run on one thread here (bn_act.cpp).
        .flag("-fopenmp")
        .flag_if_supported("-Wno-unused-parameter")
        .warnings(false)
        // Line tables only (`-g1`): cargo's `debug = "line-tables-only"` reaches cc as full
        // `-g`, whose libtorch-header debug info put ~15 MB into every binary and test.
        .debug(false)
        .flag("-g1")
        .compile("modelzoo_device_shim");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib=torch_cpu");
    println!("cargo:rustc-link-lib=dylib=c10");
    // The OpenMP runtime libtorch itself uses, so the shim's parallel loops share libtorch's
    // intra-op thread pool instead of starting a second one: the libgomp beside libtorch_cpu
    // (`libgomp.so.1` in PyPI wheels, `libgomp-<hash>.so.1` in pytorch.org's zips), else the
    // system's.
    match openmp_runtime(&lib) {
        Some(name) => println!("cargo:rustc-link-lib=dylib:+verbatim={name}"),
        None => println!("cargo:rustc-link-lib=dylib=gomp"),
    }
    nccl_shim::build(&lib, &include);
}

/// The file name of the libgomp shipped in libtorch's `lib` directory, if any.
fn openmp_runtime(lib: &std::path::Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(lib)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("libgomp") && n.contains(".so"))
        .collect();
    names.sort();
    names.into_iter().next()
}

/// `$OUT_DIR/libmodelzoo_nccl.so` from csrc/nccl.cpp: c10d's ProcessGroupNCCL, compiled with
/// `-DUSE_C10D_NCCL` against the CUDA and NCCL headers of the torch wheel's `nvidia/*`
/// packages and linked against libtorch_cuda, which the crate's own objects never link.
/// src/nccl.rs embeds the bytes and loads them only for CUDA data parallel. Missing headers
/// (or a CPU-only libtorch) do not fail the build: the library is left empty, the reason is
/// written to `$OUT_DIR/nccl_shim_unavailable.txt`, and a CUDA data-parallel run says it.
mod nccl_shim {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// The libraries the NCCL shim links; all are loaded before it at run time.
    const LIBS: &[&str] = &["torch_cuda", "c10_cuda", "torch_cpu", "c10"];
    /// The compile definitions libtorch's CMake package gives users of torch_cuda
    /// (share/cmake/Caffe2/Caffe2Targets.cmake), so the headers see the classes' real layout.
    const DEFINES: &[&str] = &[
        "USE_C10D_NCCL",
        "USE_DISTRIBUTED",
        "USE_NVSHMEM",
        "USE_RPC",
        "USE_TENSORPIPE",
    ];

    fn dir_from_env(var: &str, default: PathBuf) -> PathBuf {
        println!("cargo:rerun-if-env-changed={var}");
        std::env::var_os(var).map(PathBuf::from).unwrap_or(default)
    }

    /// Each header the build needs, and where it was looked for; `Err` names the missing one.
    fn check(files: &[(&Path, &str, &str)]) -> Result<(), String> {
        for (dir, file, remedy) in files {
            let path = dir.join(file);
            println!("cargo:rerun-if-changed={}", path.display());
            if !path.is_file() {
                return Err(format!("{} is missing ({remedy})", path.display()));
            }
        }
        Ok(())
    }

    fn compile(lib: &Path, include: &Path, out: &Path) -> Result<(), String> {
        // torch/lib -> site-packages, where pip puts the nvidia-* wheels torch depends on.
        let site = lib.join("../..");
        let nccl = dir_from_env("NCCL_INCLUDE_DIR", site.join("nvidia/nccl/include"));
        let cuda = dir_from_env("CUDA_INCLUDE_DIR", site.join("nvidia/cu13/include"));
        let setup = "`make setup` installs the wheel's nvidia-cuda-crt and nvidia-cuda-cccl headers; or set CUDA_INCLUDE_DIR to a CUDA toolkit's include directory";
        check(&[
            (lib, "libtorch_cuda.so", "a CPU-only libtorch has no NCCL"),
            (
                &nccl,
                "nccl.h",
                "pip package nvidia-nccl, which torch's CUDA wheel depends on; or set NCCL_INCLUDE_DIR",
            ),
            (&cuda, "cuda_runtime_api.h", setup),
            (&cuda, "crt/host_config.h", setup),
            (&cuda, "nv/target", setup),
        ])?;
        let compiler = cc::Build::new().cpp(true).get_compiler();
        let mut cmd: Command = compiler.to_command();
        // -g0: the bytes are embedded in every binary; debug info would be most of them.
        cmd.args([
            "-shared",
            "-fPIC",
            "-g0",
            "-std=c++17",
            "-D_GLIBCXX_USE_CXX11_ABI=1",
        ])
        .args(["-Wno-unused-parameter", "-Wno-interference-size"])
        .args(DEFINES.iter().map(|d| format!("-D{d}")))
        .arg("-I")
        .arg(include)
        .arg("-I")
        .arg(include.join("torch/csrc/api/include"))
        .arg("-I")
        .arg(&nccl)
        .arg("-I")
        .arg(&cuda)
        .arg("csrc/nccl.cpp")
        .arg("-o")
        .arg(out)
        // Every symbol resolved now, against the libraries named here, by their sonames:
        // at run time those are the ones already loaded (no run path is baked in).
        .args([
            "-Wl,-soname,libmodelzoo_nccl.so",
            "-Wl,-z,defs",
            "-Wl,--no-as-needed",
        ])
        .arg(format!("-L{}", lib.display()))
        .args(LIBS.iter().map(|l| format!("-l{l}")));
        let output = cmd
            .output()
            .map_err(|e| format!("cannot run the C++ compiler ({cmd:?}): {e}"))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let first_error = stderr
                .lines()
                .find(|l| l.contains("error"))
                .unwrap_or("no error line");
            return Err(format!(
                "compiling csrc/nccl.cpp failed ({}): {first_error}",
                output.status
            ));
        }
        Ok(())
    }

    pub fn build(lib: &Path, include: &Path) {
        println!("cargo:rerun-if-changed=csrc/nccl.cpp");
        let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        let so = out_dir.join("libmodelzoo_nccl.so");
        let reason = match compile(lib, include, &so) {
            Ok(()) => String::new(),
            Err(reason) => {
                println!(
                    "cargo:warning=the NCCL shim was not built: {reason}. DDP on CUDA will be unavailable"
                );
                let _ = std::fs::write(&so, b"");
                reason
            }
        };
        if let Err(e) = std::fs::write(out_dir.join("nccl_shim_unavailable.txt"), reason) {
            panic!("writing {}: {e}", out_dir.display());
        }
    }
}

/// Feature `bindgen`: the SDK declarations of `src/bindings.rs`, generated from the SDK's C
/// headers (the real SDK's, or the emulator's installed by scripts/build-emulator.sh) into
/// `$OUT_DIR/sdaa_bindings.rs`, in the crate's shape: one `unsafe extern "C" fn` pointer type
/// per function (the libraries are dlopen'ed, never linked) and C enums as `c_int`.
#[cfg(feature = "bindgen")]
mod sdk_bindings {
    use quote::quote;
    use std::path::PathBuf;

    /// The headers read, under `$SDAA_HOME/include`.
    const HEADERS: &[&str] = &[
        "sdaa_runtime.h",
        "tecodnn.h",
        "tecoblas.h",
        "tecodnn_ext.h",
        "sdpti.h",
        "tecorand.h",
        "tccl.h",
    ];
    /// Functions, types and constants src/bindings.rs uses (regexes, anchored by bindgen).
    const FUNCTIONS: &str = "sdaa(GetDeviceCount|SetDevice|GetDevice|DeviceSynchronize|MemGetInfo|DriverGetVersion|RuntimeGetVersion|GetDeviceProperties|GetErrorString|DriverGetVersionString|RuntimeGetVersionString)|(tecodnn|tecoblas|tecodnnExt|sdpti|tecorand)GetVersion(String)?|tccl(GetVersion|GetVersionString|GetUniqueId|CommInitRank|AllReduce|Broadcast|CommDestroy|GetErrorString)";
    const TYPES: &str =
        "sdaaError_t|sdaaStream_t|tcclResult_t|tcclComm_t|tcclUniqueId|tcclDataType_t|tcclRedOp_t";
    /// C enums the crate passes as `c_int` (same size and calling convention as a C enum on
    /// the supported ABIs; clang types an enum without negative values `unsigned int`).
    const C_INT_ENUMS: &[&str] = &[
        "sdaaError",
        "sdaaError_t",
        "tcclResult_t",
        "tcclDataType_t",
        "tcclRedOp_t",
    ];

    fn fail(message: String) -> ! {
        eprintln!("error: {message}");
        std::process::exit(1);
    }

    pub fn generate() {
        println!("cargo:rerun-if-env-changed=SDAA_HOME");
        let home = std::env::var_os("SDAA_HOME").unwrap_or_else(|| {
            fail(
                "feature `bindgen` generates the SDK declarations from $SDAA_HOME/include, \
                  but SDAA_HOME is not set: point it at the SDAA SDK (or at \
                  target/sdaa-emulator after scripts/build-emulator.sh), or build without \
                  the feature to use the checked-in declarations"
                    .into(),
            )
        });
        let include = PathBuf::from(home).join("include");
        if !include.is_dir() {
            fail(format!(
                "feature `bindgen`: {} is not a directory (SDAA_HOME/include); point SDAA_HOME \
                 at an SDAA SDK with its C headers, or build without the feature",
                include.display()
            ));
        }
        let mut wrapper = String::new();
        for h in HEADERS {
            let path = include.join(h);
            if !path.is_file() {
                fail(format!(
                    "feature `bindgen`: header {} is missing (looked in SDAA_HOME/include = {})",
                    h,
                    include.display()
                ));
            }
            wrapper.push_str(&format!("#include \"{}\"\n", path.display()));
        }
        let generated = bindgen::Builder::default()
            .header_contents("sdaa_bindings_wrapper.h", &wrapper)
            .clang_arg(format!("-I{}", include.display()))
            .allowlist_function(FUNCTIONS)
            .allowlist_type(TYPES)
            .default_enum_style(bindgen::EnumVariation::Consts)
            .prepend_enum_name(false)
            .layout_tests(false)
            .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
            .generate()
            .unwrap_or_else(|e| fail(format!("bindgen on {}: {e}", include.display())));
        let code = reshape(&generated.to_string());
        let out = PathBuf::from(
            std::env::var_os("OUT_DIR").unwrap_or_else(|| fail("cargo did not set OUT_DIR".into())),
        )
        .join("sdaa_bindings.rs");
        if let Err(e) = std::fs::write(&out, code) {
            fail(format!("writing {}: {e}", out.display()));
        }
    }

    /// bindgen's `extern "C" { pub fn f(..) -> R; }` → `pub type f = unsafe extern "C"
    /// fn(..) -> R;`, and the C enums' `c_uint` aliases → `c_int`.
    fn reshape(source: &str) -> String {
        let file = syn::parse_file(source)
            .unwrap_or_else(|e| fail(format!("parsing bindgen's output: {e}")));
        let mut items = Vec::new();
        for item in file.items {
            match item {
                syn::Item::ForeignMod(block) => {
                    for foreign in block.items {
                        let syn::ForeignItem::Fn(f) = foreign else {
                            fail(format!(
                                "unexpected foreign item in bindgen's output: {}",
                                quote!(#foreign)
                            ))
                        };
                        let (attrs, name, inputs, output) =
                            (&f.attrs, &f.sig.ident, &f.sig.inputs, &f.sig.output);
                        if f.sig.variadic.is_some() {
                            fail(format!(
                                "{name} is variadic; the crate calls no variadic function"
                            ));
                        }
                        items.push(quote! {
                            #(#attrs)* pub type #name = unsafe extern "C" fn(#inputs) #output;
                        });
                    }
                }
                syn::Item::Type(alias)
                    if C_INT_ENUMS.contains(&alias.ident.to_string().as_str()) =>
                {
                    let target = &alias.ty;
                    let spelled = quote!(#target).to_string().replace(' ', "");
                    if spelled != "::std::os::raw::c_uint" && spelled != "::std::os::raw::c_int" {
                        // e.g. `sdaaError_t = sdaaError` (an alias of a rewritten alias) is fine.
                        if !C_INT_ENUMS.contains(&spelled.as_str()) {
                            fail(format!(
                                "enum {} is {spelled} in the headers; the crate passes it as c_int",
                                alias.ident
                            ));
                        }
                        items.push(quote!(#alias));
                    } else {
                        let (attrs, name) = (&alias.attrs, &alias.ident);
                        items.push(quote! { #(#attrs)* pub type #name = ::std::os::raw::c_int; });
                    }
                }
                other => items.push(quote!(#other)),
            }
        }
        let mut out = String::from("// Generated by device-sdaa/build.rs (feature `bindgen`).\n");
        for item in items {
            out.push_str(&item.to_string());
            out.push('\n');
        }
        out
    }
}
