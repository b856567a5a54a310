//! Diagnostics piped into a file or another program carry no ANSI colour codes: colour is for
//! terminals only (the demo log used to be full of `ESC[2m`).

use std::process::Command;

#[test]
fn warnings_into_a_pipe_have_no_colour_codes() {
    let empty = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(["validate", "--all"])
        .arg(empty.path())
        .env("RUST_LOG", "warn")
        .env_remove("NO_COLOR")
        .output()
        .expect("run modelzoo");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("WARN") && err.contains("no model directories found"),
        "{err}"
    );
    assert!(
        !o.stderr.contains(&0x1b) && !o.stdout.contains(&0x1b),
        "ESC in piped output: {err:?}"
    );
}
