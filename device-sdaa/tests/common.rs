//! Shared by the emulator tests: where `make build` puts the SDAA emulator.

use std::path::PathBuf;

/// `<repo>/target/sdaa-emulator`, panicking with what to run when it was not built.
pub fn emulator_home() -> PathBuf {
    let home = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/sdaa-emulator");
    let plugin = home.join("lib64/libtorch_sdaa.so");
    assert!(
        plugin.is_file(),
        "SDAA emulator not built: {} is missing. Run `make build` (or scripts/build-emulator.sh) first.",
        plugin.display()
    );
    home.canonicalize().unwrap_or(home)
}

/// Point this test process at the emulator (every test of a file sets the same value).
#[allow(dead_code)]
pub fn use_emulator() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::env::set_var("SDAA_HOME", emulator_home());
        std::env::remove_var("TECO_HOME");
        std::env::remove_var("SDAA_TORCH_PLUGIN");
    });
}
