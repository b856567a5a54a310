//! `modelzoo env` as a user runs it: the torch_sdaa banner against the SDAA emulator with every
//! row filled, N/A rows and exit 0 without SDAA, `--json`, and exit 2 with a clear message for
//! each SDAA fault of `--device sdaa` (libraries, symbol, plugin) and for a missing CUDA GPU.

use modelzoo_testkit::emulator_home;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

/// Run `modelzoo env ARGS` with SDAA_HOME set (or not) and no other SDAA variables.
fn env_cmd(sdaa_home: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_modelzoo"));
    cmd.arg("env").args(args);
    for var in [
        "SDAA_HOME",
        "TECO_HOME",
        "SDAA_TORCH_PLUGIN",
        "SDAA_EMULATOR_DEVICES",
    ] {
        cmd.env_remove(var);
    }
    if let Some(h) = sdaa_home {
        cmd.env("SDAA_HOME", h);
    }
    cmd.output().expect("run modelzoo env")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

fn no_real_sdaa() -> bool {
    !Path::new("/opt/tecoai/lib64/libsdaart.so").exists()
}

#[test]
fn banner_against_the_emulator_has_every_row_filled() {
    let home = emulator_home();
    let out = env_cmd(Some(&home), &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let lib64 = home.join("lib64");
    let sep = "--------------+------------------------------------------------";
    assert!(
        stdout.starts_with(&format!("{sep}\n Host IP      | ")),
        "{stdout}"
    );
    for (label, version, file) in [
        ("Torch-SDAA  ", "2.1.1-emulator", "libtorch_sdaa.so"),
        ("SDAA Runtime", "2.1.0-emulator", "libsdaart.so"),
        ("SDPTI       ", "1.4.0-emulator", "libsdpti.so"),
        ("TecoDNN     ", "2.1.0-emulator", "libtecodnn.so"),
        ("TecoBLAS    ", "2.1.0-emulator", "libtecoblas.so"),
        ("CustomDNN   ", "1.20.0-emulator", "libtecodnn_ext.so"),
        ("TecoRAND    ", "2.0.1-emulator", "libtecorand.so"),
        ("TCCL        ", "1.23.0-emulator", "libtccl.so"),
    ] {
        let row = format!(" {label} | {version} ({})\n", lib64.join(file).display());
        assert!(stdout.contains(&row), "missing row {row:?} in\n{stdout}");
    }
    assert!(
        stdout.contains(" SDAA Driver  | 2.1.1-emulator (N/A)\n"),
        "{stdout}"
    );
    assert!(stdout.contains(" PyTorch      | 2.11.0"), "{stdout}");
    assert!(stdout.contains("libtorch_cpu.so)"), "{stdout}");
    assert!(
        stdout.contains(" SDAA Devices | 2 (EMULATOR, not SDAA hardware)\n"),
        "{stdout}"
    );
    assert!(stdout.contains(" CPU          | "), "{stdout}");
    assert!(stdout.contains(" CUDA Driver  | "), "{stdout}");
    assert!(!stdout.contains("N/A\n SDPTI"), "{stdout}");
}

#[test]
fn json_has_the_same_facts() {
    let home = emulator_home();
    let out = env_cmd(Some(&home), &["--json", "--device", "sdaa:1"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(v["torch_sdaa"]["version"], "2.1.1-emulator");
    assert_eq!(v["sdaa_is_emulator"], true);
    assert_eq!(v["sdaa_device_count"], 2);
    let libs = v["sdaa_libraries"].as_array().unwrap();
    assert_eq!(libs.len(), 7);
    assert!(
        libs.iter()
            .all(|l| l["version"].is_string() && l["path"].is_string()),
        "{v}"
    );
    assert!(v["cpu_threads"].as_u64().unwrap() >= 1);
    assert_eq!(v["opened_device"]["name"], "SDAA emulator device 1");
    assert_eq!(v["opened_device"]["process_group_backend"], "tccl");
    assert!(v["opened_device"]["memory"]["total"].as_u64().unwrap() > 0);
}

#[test]
fn without_sdaa_rows_are_na_and_exit_is_zero() {
    if !no_real_sdaa() {
        return; // a real SDK is installed: its rows are filled
    }
    let out = env_cmd(None, &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for label in [
        "Torch-SDAA  ",
        "SDAA Driver ",
        "SDAA Runtime",
        "TecoDNN     ",
        "TCCL        ",
    ] {
        assert!(
            stdout.contains(&format!(" {label} | N/A\n")),
            "{label}: {stdout}"
        );
    }
    assert!(
        stdout.contains("SDAA: SDAA requested but libsdaart.so"),
        "{stdout}"
    );
}

fn fake_home(files: &[(&str, &str)]) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let lib64 = t.path().join("lib64");
    fs::create_dir_all(&lib64).unwrap();
    let src = emulator_home().join("lib64");
    for (name, from) in files {
        if from.is_empty() {
            fs::write(lib64.join(name), "not a library").unwrap();
        } else {
            fs::copy(src.join(from), lib64.join(name)).unwrap();
        }
    }
    t
}

fn fails_with(home: &Path, extra: &[&str], needles: &[&str]) {
    let mut args = vec!["--device", "sdaa"];
    args.extend_from_slice(extra);
    let out = env_cmd(Some(home), &args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{n:?} not in: {stderr}");
    }
}

#[test]
fn sdaa_faults_exit_2_with_one_clear_message() {
    if !no_real_sdaa() {
        return; // the system path would find the real libraries
    }
    // Libraries absent: each named, every directory searched, the variables.
    let empty = fake_home(&[]);
    let lib64 = empty.path().join("lib64").display().to_string();
    fails_with(
        empty.path(),
        &[],
        &[
            "libsdaart.so, libtecodnn.so, libtecoblas.so, libtccl.so",
            &lib64,
            "/opt/tecoai/lib64",
            "SDAA_HOME",
            "TECO_HOME",
        ],
    );

    // A library lacking a symbol.
    let all = [
        ("libsdaart.so", "libsdaart.so"),
        ("libtecodnn.so", "libtecodnn.so"),
        ("libtecoblas.so", "libtecoblas.so"),
        ("libtccl.so", "libtecorand.so"),
    ];
    let no_sym = fake_home(&all);
    let tccl = no_sym.path().join("lib64/libtccl.so").display().to_string();
    fails_with(no_sym.path(), &[], &["`tcclGetVersion`", &tccl]);

    // Libraries fine, plugin absent.
    let mut good = all;
    good[3] = ("libtccl.so", "libtccl.so");
    let no_plugin = fake_home(&good);
    fails_with(
        no_plugin.path(),
        &[],
        &["plugin not found", "libtorch_sdaa.so", "--sdaa_plugin"],
    );

    // Plugin present but not a library; then one that registers nothing.
    let mut with_bad = good.to_vec();
    with_bad.push(("libtorch_sdaa.so", ""));
    let bad_plugin = fake_home(&with_bad);
    let plugin = bad_plugin
        .path()
        .join("lib64/libtorch_sdaa.so")
        .display()
        .to_string();
    fails_with(bad_plugin.path(), &[], &[&plugin, "failed to load"]);
    fails_with(
        no_plugin.path(),
        &[
            "--sdaa_plugin",
            &emulator_home()
                .join("lib64/libtecorand.so")
                .display()
                .to_string(),
        ],
        &[
            "libtecorand.so",
            "did not register a PrivateUse1 backend named \"sdaa\"",
        ],
    );

    // A device ordinal the (emulated) machine lacks.
    let out = env_cmd(Some(&emulator_home()), &["--device", "sdaa:9"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("sdaa:9 requested but this machine has 2 sdaa devices"),
        "{stderr}"
    );
}

#[test]
fn cuda_without_a_gpu_says_so() {
    if Path::new("/dev/nvidiactl").exists() {
        return; // a GPU machine: covered by device-sdaa's cuda test
    }
    let out = env_cmd(None, &["--device", "cuda"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no CUDA GPU is visible"), "{stderr}");
    let out = env_cmd(None, &["--device", "gpu"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("cpu, cuda, cuda:N, sdaa, sdaa:N"));
}
