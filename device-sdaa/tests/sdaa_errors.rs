//! Every SDAA failure of issue §6 against fake library directories made here from the emulator's
//! files: the error names what is missing, where it looked, and what to set. This process never
//! loads the real emulator plugin, so "plugin did not register" is observable.

mod common;

use std::fs;
use std::path::PathBuf;

use device_sdaa::sdaa::{load_plugin_from, plugin_candidates_from, SdaaLibraries};
use device_sdaa::{DeviceError, OpenOptions};

fn emulator_lib(file: &str) -> PathBuf {
    common::emulator_home().join("lib64").join(file)
}

/// A temp `lib64` holding copies of the named emulator libraries.
fn fake_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, from) in files {
        let to = dir.path().join(name);
        if from.is_empty() {
            fs::write(&to, b"this is not an ELF shared object").unwrap();
        } else {
            fs::copy(emulator_lib(from), &to).unwrap();
        }
    }
    dir
}

fn err(r: Result<SdaaLibraries, DeviceError>) -> DeviceError {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

#[test]
fn a_library_without_a_needed_symbol_names_symbol_and_file() {
    // libtecorand.so has no tecoblasGetVersion.
    let d = fake_dir(&[
        ("libsdaart.so", "libsdaart.so"),
        ("libtecodnn.so", "libtecodnn.so"),
        ("libtecoblas.so", "libtecorand.so"),
        ("libtccl.so", "libtccl.so"),
    ]);
    let e = err(SdaaLibraries::load_from(&[d.path().into()]));
    match &e {
        DeviceError::SymbolMissing { symbol, file, .. } => {
            assert_eq!(symbol, "tecoblasGetVersion");
            assert_eq!(file, &d.path().join("libtecoblas.so"));
        }
        other => panic!("wrong error: {other:?}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains("`tecoblasGetVersion`") && msg.contains("libtecoblas.so"),
        "{msg}"
    );
}

#[test]
fn a_broken_library_file_is_reported_with_its_path() {
    let d = fake_dir(&[
        ("libsdaart.so", "libsdaart.so"),
        ("libtecodnn.so", "libtecodnn.so"),
        ("libtecoblas.so", "libtecoblas.so"),
        ("libtccl.so", ""),
    ]);
    let e = err(SdaaLibraries::load_from(&[d.path().into()]));
    let msg = e.to_string();
    assert!(matches!(e, DeviceError::LibraryLoad { .. }), "{e:?}");
    assert!(
        msg.contains(&d.path().join("libtccl.so").display().to_string()),
        "{msg}"
    );
}

#[test]
fn complete_directory_loads_and_reports_every_file() {
    let d = fake_dir(&[
        ("libsdaart.so", "libsdaart.so"),
        ("libtecodnn.so", "libtecodnn.so"),
        ("libtecoblas.so", "libtecoblas.so"),
        ("libtccl.so", "libtccl.so"),
        ("libtecorand.so", "libtecorand.so"),
    ]);
    let libs = match SdaaLibraries::load_from(&[d.path().into()]) {
        Ok(l) => l,
        Err(e) => panic!("{e}"),
    };
    let loaded: Vec<_> = libs.loaded().into_iter().map(|l| l.path).collect();
    assert_eq!(loaded.len(), 5);
    assert!(loaded.iter().all(|p| p.starts_with(d.path())), "{loaded:?}");
    assert_eq!(
        libs.version_of("libtecoblas.so").as_deref(),
        Some("2.1.0-emulator")
    );
    assert_eq!(libs.version_of("libsdpti.so"), None);
}

fn plugin_err(candidates: &[PathBuf], explicit: bool) -> String {
    match load_plugin_from(candidates, explicit) {
        Ok(p) => panic!("expected an error, loaded {p:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn plugin_absent_lists_where_it_looked_and_the_flag() {
    let a = tempfile::tempdir().unwrap();
    let (candidates, explicit) =
        plugin_candidates_from(&OpenOptions::default(), &[a.path().into()]);
    if std::env::var_os("SDAA_TORCH_PLUGIN").is_some() {
        return; // the environment overrides the search; covered by the CLI tests
    }
    assert!(!explicit);
    let msg = plugin_err(&candidates, explicit);
    assert!(
        msg.contains(&a.path().join("libtorch_sdaa.so").display().to_string()),
        "{msg}"
    );
    assert!(
        msg.contains("--sdaa_plugin") && msg.contains("SDAA_TORCH_PLUGIN"),
        "{msg}"
    );

    let given = a.path().join("nope/libtorch_sdaa.so");
    let opts = OpenOptions {
        sdaa_plugin: Some(given.clone()),
    };
    let (c, explicit) = plugin_candidates_from(&opts, &[]);
    assert!(explicit);
    let msg = plugin_err(&c, explicit);
    assert!(
        msg.contains(&given.display().to_string()) && msg.contains("no such file"),
        "{msg}"
    );
}

#[test]
fn plugin_that_fails_to_load_or_register_says_which_file_and_what() {
    let d = fake_dir(&[("garbage.so", ""), ("libtorch_sdaa.so", "libtecorand.so")]);
    let garbage = d.path().join("garbage.so");
    let msg = plugin_err(std::slice::from_ref(&garbage), true);
    assert!(
        msg.contains(&garbage.display().to_string()) && msg.contains("failed to load"),
        "{msg}"
    );

    // A valid library that registers nothing with libtorch.
    let silent = d.path().join("libtorch_sdaa.so");
    let msg = plugin_err(std::slice::from_ref(&silent), true);
    assert!(msg.contains(&silent.display().to_string()), "{msg}");
    assert!(
        msg.contains("did not register a PrivateUse1 backend named \"sdaa\""),
        "{msg}"
    );
}
