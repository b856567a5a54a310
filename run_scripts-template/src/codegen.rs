//! Build-script support: a model crate's `build.rs` turns the standard spec plus its own
//! `spec.yaml` into one checked, merged spec embedded in its `run_<model>` binary, so adding an
//! argument is a YAML edit and a bad spec fails the build with a clear message.

use std::path::{Path, PathBuf};

use crate::cli::build_command;
use crate::spec::{ArgSpec, SpecError};

/// File name of the merged spec written into `OUT_DIR`.
pub const MERGED_SPEC_FILE: &str = "run_args.yaml";

/// File name of the model's typed arguments (`ModelArgs`, its own spec's `args`) written into
/// `OUT_DIR`; the standard ones are [`crate::StandardArgs`].
pub const MODEL_ARGS_FILE: &str = "model_args.rs";

/// Merge the standard spec with `model_spec`, check it (names, defaults, choices, and clap's own
/// consistency checks), and write it to `out_dir/`[`MERGED_SPEC_FILE`], with the model's typed
/// arguments in `out_dir/`[`MODEL_ARGS_FILE`]. Returns the merged spec's path.
pub fn generate_merged_spec(
    program: &str,
    model_spec: &Path,
    out_dir: &Path,
) -> Result<PathBuf, SpecError> {
    let extras = ArgSpec::from_file(model_spec)?;
    let origin = model_spec.display().to_string();
    let merged = ArgSpec::standard().merged(&extras, &origin)?;
    // clap panics on inconsistent builders only in debug_assert; run its checks explicitly.
    let check = std::panic::catch_unwind(|| build_command(program, "", &merged).debug_assert());
    if check.is_err() {
        return Err(SpecError::Invalid {
            origin,
            message: "clap rejects the generated command (see the panic message above)".into(),
        });
    }
    let text = serde_yaml::to_string(&merged).map_err(|source| SpecError::Yaml {
        origin: origin.clone(),
        source,
    })?;
    let typed = crate::typed::struct_source(
        "ModelArgs",
        &format!("The arguments {program} adds to the standard ones ({origin}), typed."),
        &extras.args,
        "::run_scripts_template",
    );
    let write = |name: &str, text: &str| {
        let path = out_dir.join(name);
        std::fs::write(&path, text).map_err(|source| SpecError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Ok(path)
    };
    write(MODEL_ARGS_FILE, &typed)?;
    write(MERGED_SPEC_FILE, &text)
}

/// The whole spec step of a `run_<model>` crate's `build.rs`: merge `spec.yaml` (next to the
/// crate's Cargo.toml) with the standard spec into `OUT_DIR`, or fail the build with a message
/// naming the file.
pub fn run_build_script(program: &str) {
    println!("cargo:rerun-if-changed=spec.yaml");
    println!(
        "cargo:rerun-if-changed={}",
        concat!(env!("CARGO_MANIFEST_DIR"), "/spec/standard.yaml")
    );
    let result = match std::env::var_os("OUT_DIR") {
        Some(out) => generate_merged_spec(program, Path::new("spec.yaml"), Path::new(&out))
            .map_err(|e| e.to_string()),
        None => Err("cargo did not set OUT_DIR".to_string()),
    };
    if let Err(e) = result {
        println!("cargo:warning=invalid argument spec: {e}");
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_merged_spec_that_loads_back_and_rejects_bad_ones() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.yaml");
        std::fs::write(
            &good,
            "args:\n  - {name: momentum, type: float, default: 0.9, help: m}\n",
        )
        .unwrap();
        let out = generate_merged_spec("run_x", &good, dir.path()).unwrap();
        let back = ArgSpec::from_file(&out).unwrap();
        assert_eq!(back.args.len(), ArgSpec::standard().args.len() + 1);
        assert!(back.get("momentum").is_some());

        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "args:\n  - {name: lr, type: float, help: dup}\n").unwrap();
        let e = generate_merged_spec("run_x", &bad, dir.path()).unwrap_err();
        assert!(
            e.to_string().contains("bad.yaml") && e.to_string().contains("--lr is defined twice"),
            "{e}"
        );

        let typo = dir.path().join("typo.yaml");
        std::fs::write(
            &typo,
            "args:\n  - {name: wd, type: float, default: abc, help: x}\n",
        )
        .unwrap();
        let e = generate_merged_spec("run_x", &typo, dir.path()).unwrap_err();
        assert!(e.to_string().contains("not a valid Float"), "{e}");
    }
}
