//! `modelzoo diff` over dumps written by the Rust binaries (`run_resnet --dump`, built next to
//! `modelzoo`: `cargo build --release -p modelzoo-resnet --bins`): the SDAA emulator's
//! injected error is named as the first divergence, op and call index.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run_resnet() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_modelzoo"))
        .parent()
        .unwrap()
        .join("run_resnet");
    assert!(
        bin.is_file(),
        "{} is not built: run `cargo build --release -p modelzoo-resnet --bins` first (make test does)",
        bin.display()
    );
    bin
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// One resnet18 step at 32 px dumped into `dump`, on the emulator when `perturb` is given.
fn dump(dir: &Path, name: &str, perturb: Option<&str>) -> PathBuf {
    let dump = dir.join(name);
    let mut cmd = Command::new(run_resnet());
    cmd.args([
        "--model_name",
        "resnet18",
        "--num_classes",
        "10",
        "--image_size",
        "32",
        "--batch_size",
        "4",
        "--synthetic_samples",
        "8",
        "--num_workers",
        "1",
        "--step",
        "1",
    ])
    .arg("--output_dir")
    .arg(dir.join(format!("{name}_out")))
    .arg("--dump")
    .arg(&dump)
    .env("RUST_LOG", "warn");
    if let Some(p) = perturb {
        let home = root().join("target/sdaa-emulator");
        assert!(
            home.join("lib64/libtorch_sdaa.so").is_file(),
            "the SDAA emulator is not built: run `make build`"
        );
        cmd.args(["--device", "sdaa"])
            .env("SDAA_HOME", home)
            .env("SDAA_EMU_PERTURB", p)
            .env_remove("TECO_HOME")
            .env_remove("SDAA_TORCH_PLUGIN");
    }
    let out = cmd.output().expect("run_resnet starts");
    assert!(out.status.success(), "{}", text(&out));
    dump
}

#[test]
fn diff_names_the_conv_the_emulator_perturbed_in_a_run_resnet_dump() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = dump(dir.path(), "cpu", None);
    let sdaa = dump(dir.path(), "sdaa", Some("aten::conv2d#3:bias=0.5"));
    let out = Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .arg("diff")
        .arg("--baseline")
        .arg(&cpu)
        .arg("--candidate")
        .arg(&sdaa)
        .arg("--json")
        .output()
        .expect("run modelzoo");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = &summary["first_divergence"];
    assert_eq!(first["op"], "aten::conv2d", "{first}");
    assert_eq!(first["call"], 3, "{first}");
    assert_eq!(first["scope"], "layer1.1.conv1", "{first}");
}

/// `modelzoo bisect` over a Rust model: run_resnet's emulated runs write the op inventory
/// through the plugin, and with two ops computed wrong on every call among the ~30 candidates
/// of a ResNet step, bisect finds exactly those two within 2·2·log2(n)+4 runs. The baseline is
/// the emulated run without the perturbation (step rule: the same kernels, so every step agrees
/// exactly when the perturbed ops are healed).
#[test]
fn bisect_finds_the_two_ops_perturbed_in_run_resnet() {
    let dir = tempfile::tempdir().unwrap();
    let home = root().join("target/sdaa-emulator");
    let args = [
        "--model_name",
        "resnet18",
        "--num_classes",
        "10",
        "--image_size",
        "32",
        "--batch_size",
        "4",
        "--synthetic_samples",
        "8",
        "--num_workers",
        "1",
        "--step",
        "2",
        "--logging_freq",
        "1",
        "--device",
        "sdaa",
    ];
    let base = Command::new(run_resnet())
        .args(args)
        .arg("--output_dir")
        .arg(dir.path().join("base_out"))
        .env("SDAA_HOME", &home)
        .env_remove("SDAA_EMU_PERTURB")
        .output()
        .expect("run_resnet starts");
    assert!(base.status.success(), "{}", text(&base));
    let log = dir.path().join("base.log");
    std::fs::write(&log, &base.stdout).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(["bisect", "--rule", "step", "--baseline"])
        .arg(&log)
        .arg("--work-dir")
        .arg(dir.path().join("bisect"))
        .arg("--")
        .arg(run_resnet())
        .args(args)
        .args(["--output_dir", "out"])
        .env("SDAA_HOME", &home)
        .env("RUST_LOG", "error")
        .env(
            "SDAA_EMU_PERTURB",
            "aten::addmm:rel=0.3;aten::native_batch_norm:rel=0.2",
        )
        .env_remove("TORCH_SDAA_FALLBACK_OPS")
        .output()
        .expect("run modelzoo");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("bisect/bisect.json")).unwrap())
            .unwrap();
    assert_eq!(
        report["ops"],
        serde_json::json!(["aten::addmm", "aten::native_batch_norm"]),
        "{}",
        text(&out)
    );
    let n = report["candidates"].as_array().unwrap().len() as f64;
    let runs = report["runs"].as_f64().unwrap();
    assert!(n >= 20.0, "{report}");
    assert!(runs <= 2.0 * 2.0 * n.log2() + 4.0, "{runs} runs for {n}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("TORCH_SDAA_FALLBACK_OPS=addmm,native_batch_norm"),
        "{stdout}"
    );
}
