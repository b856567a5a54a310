//! Absent SDAA libraries: the error names each missing one, every directory searched and the
//! variables that set them. Its own test binary: a library already loaded by another test would
//! be found by its soname through the system search path.

mod common;

use std::fs;
use std::path::PathBuf;

use device_sdaa::sdaa::SdaaLibraries;
use device_sdaa::DeviceError;

fn fake_dir(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in files {
        let from: PathBuf = common::emulator_home().join("lib64").join(name);
        fs::copy(from, dir.path().join(name)).unwrap();
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
fn absent_libraries_are_each_named_with_every_directory_searched() {
    let a = tempfile::tempdir().unwrap();
    let b = fake_dir(&["libsdaart.so", "libtecodnn.so"]);
    let e = err(SdaaLibraries::load_from(&[
        a.path().into(),
        b.path().into(),
    ]));
    let msg = e.to_string();
    match &e {
        DeviceError::SdaaLibrariesMissing { missing, searched } => {
            assert_eq!(missing, &["libtecoblas.so", "libtccl.so"]);
            assert_eq!(searched.len(), 2);
        }
        other => panic!("wrong error: {other:?}"),
    }
    for needle in [
        "libtecoblas.so, libtccl.so",
        &a.path().display().to_string(),
        &b.path().display().to_string(),
        "system library path",
        "SDAA_HOME",
        "TECO_HOME",
    ] {
        assert!(msg.contains(needle), "{needle:?} missing from: {msg}");
    }
    assert!(!msg.contains("libsdaart.so"), "{msg}");
}
