//! `modelzoo port` end to end: CUDA-style training scripts of our own (port/tests/data/) are
//! migrated, run on the CPU baseline (their CUDA calls mapped by the port's shim, no GPU here)
//! and on the SDAA emulator, and compared — the real binary, real Python processes.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn project(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../port/tests/data")
        .join(name)
}

/// A copy of a test project in a temp dir (the baseline runs in it and may write there).
fn copy_project(name: &str, tmp: &Path) -> PathBuf {
    let dst = tmp.join(name);
    std::fs::create_dir_all(&dst).unwrap();
    for entry in std::fs::read_dir(project(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
    }
    dst
}

struct Ported {
    code: i32,
    stdout: String,
    stderr: String,
    json: Value,
    md: String,
    out: PathBuf,
}

fn port(src: &Path, out: &Path, env: &[(&str, &str)], cmd: &[&str]) -> Ported {
    let mut c = Command::new(env!("CARGO_BIN_EXE_modelzoo"));
    c.arg("port")
        .arg(src)
        .arg("--out")
        .arg(out)
        .args(["--baseline-device", "cpu", "--timeout", "300", "--"])
        .args(cmd)
        .env_remove("TORCH_SDAA_BANNER")
        .env_remove("SDAA_EMU_PERTURB");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap_or_default();
    Ported {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        json: serde_json::from_str(&read("port.json")).unwrap_or(Value::Null),
        md: read("PORT.md"),
        out: out.to_path_buf(),
    }
}

impl Ported {
    fn context(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}\n--- stderr\n{}\n--- PORT.md\n{}",
            self.code, self.stdout, self.stderr, self.md
        )
    }
}

#[test]
fn a_cuda_script_with_amp_and_cudnn_ports_and_passes_on_the_emulator() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("classic", tmp.path());
    let before = std::fs::read(src.join("train.py")).unwrap();
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py", "--steps", "6", "--amp"],
    );
    assert_eq!(p.code, 0, "{}", p.context());
    assert_eq!(p.json["verdict"], "pass", "{}", p.context());
    // The original is untouched; the port is migrated and carries the report.
    assert_eq!(std::fs::read(src.join("train.py")).unwrap(), before);
    let migrated = std::fs::read_to_string(p.out.join("train.py")).unwrap();
    assert!(migrated.contains("import torch_sdaa"), "{migrated}");
    assert!(migrated.contains(".sdaa(non_blocking=True)"), "{migrated}");
    assert!(migrated.contains("torch.sdaa.amp.autocast"), "{migrated}");
    // Code, that is: the docstring's prose about `.cuda()` is left as written.
    let code: Vec<&str> = migrated
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .skip_while(|l| !l.starts_with("import"))
        .collect();
    assert!(!code.iter().any(|l| l.contains(".cuda(")), "{migrated}");
    // Both runs went to the end on what they say, with the same steps.
    let (b, c) = (&p.json["baseline"], &p.json["candidate"]);
    assert!(b["device"].as_str().unwrap().starts_with("cpu"), "{b}");
    assert_eq!(c["device"], "sdaa (emulator)", "{c}");
    assert_eq!(
        (b["steps"].as_u64(), c["steps"].as_u64()),
        (Some(6), Some(6))
    );
    assert_eq!(b["loss_metric"], "loss");
    // Every rewrite is listed with its lines; the cudnn flag is a finding for a person.
    let rewrites = p.json["rewrites"].as_array().unwrap();
    assert!(
        rewrites.iter().any(|r| r["file"] == "train.py"),
        "{rewrites:?}"
    );
    assert!(p.md.contains("| `train.py` |"), "{}", p.md);
    let findings = p.json["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|f| f["rule"] == "cudnn-flag"),
        "{findings:?}"
    );
    // What ran on the device: the emulator's op inventory, and the coverage file.
    let inv = &p.json["inventory"];
    assert!(inv["device_ops"].as_u64().unwrap() > 10, "{inv}");
    let coverage = std::fs::read_to_string(inv["coverage_txt"].as_str().unwrap()).unwrap();
    assert!(
        coverage.contains("'convolution'") || coverage.contains("'_convolution'"),
        "{coverage}"
    );
    assert!(p.md.starts_with("# Port report: PASS"), "{}", p.md);
    assert!(p.stdout.contains("matches the original"), "{}", p.context());
}

#[test]
fn a_device_switch_script_logging_with_tcap_dllogger_ports_and_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("switch", tmp.path());
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py", "--steps", "5", "--log", "loss.json"],
    );
    assert_eq!(p.code, 0, "{}", p.context());
    assert_eq!(
        p.json["baseline"]["loss_metric"],
        "train.loss",
        "{}",
        p.context()
    );
    let migrated = std::fs::read_to_string(p.out.join("train.py")).unwrap();
    assert!(
        migrated.contains("\"sdaa\" if torch.sdaa.is_available() else \"cpu\""),
        "{migrated}"
    );
    // Dropout draws the same numbers on both sides: the emulator's random ops use the host
    // generator the CPU baseline uses, so the losses agree closely.
    let fig = &p.json["compare"]["figures"];
    assert!(fig["mean_rel_err_abs"].as_f64().unwrap() < 1e-3, "{fig}");
}

#[test]
fn nccl_data_parallel_under_torchrun_ports_to_tccl_and_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("ddp", tmp.path());
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &[
            "torchrun",
            "--standalone",
            "--nproc_per_node",
            "2",
            "train.py",
            "--steps",
            "4",
        ],
    );
    assert_eq!(p.code, 0, "{}", p.context());
    let migrated = std::fs::read_to_string(p.out.join("train.py")).unwrap();
    assert!(migrated.contains("backend=\"tccl\""), "{migrated}");
    assert_eq!(
        p.json["candidate"]["steps"].as_u64(),
        Some(4),
        "{}",
        p.context()
    );
}

#[test]
fn fp64_on_the_device_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("classic", tmp.path());
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py", "--steps", "3", "--fp64-stats"],
    );
    assert_eq!(p.code, 0, "{}", p.context());
    let fp64 = p.json["inventory"]["fp64_device"].as_array().unwrap();
    assert!(
        fp64.iter().any(|e| e[0].as_str().unwrap().contains("add")),
        "{fp64:?}"
    );
    assert!(p.md.contains("**fp64 (Double) on the device**"), "{}", p.md);
}

#[test]
fn a_script_that_fails_only_on_sdaa_exits_1_with_the_line_of_the_original() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("classic", tmp.path());
    // torch.cuda.memory_stats() becomes torch.sdaa.memory_stats(), which the emulator lacks
    // (and says so); the CPU baseline reports no CUDA memory and runs on.
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py", "--steps", "2", "--memory-stats"],
    );
    assert_eq!(p.code, 1, "{}", p.context());
    assert_eq!(p.json["verdict"], "crash", "{}", p.context());
    let crash = &p.json["candidate"]["crash"];
    assert_eq!(crash["file"], "train.py", "{crash}");
    let original = std::fs::read_to_string(src.join("train.py")).unwrap();
    let line = original
        .lines()
        .position(|l| l.contains("print(torch.cuda.memory_stats())"))
        .unwrap()
        + 1;
    assert_eq!(
        crash["original_line"].as_u64(),
        Some(line as u64),
        "{crash}"
    );
    assert_eq!(crash["original_code"], "print(torch.cuda.memory_stats())");
    assert!(
        crash["error"].as_str().unwrap().contains("memory_stats"),
        "{crash}"
    );
    assert!(p.stdout.contains("crashed on sdaa"), "{}", p.context());
}

#[test]
fn an_op_computed_wrong_on_the_device_is_a_drift() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("classic", tmp.path());
    // The emulator's fault injection: the classifier head's products on sdaa are computed
    // wrong, x·(1 + 5u) with u uniform in [-1, 1] (a constant shift would cancel out in
    // BatchNorm or the softmax).
    let faults = (0..12)
        .map(|i| format!("aten::addmm#{i}:rel=5"))
        .collect::<Vec<_>>()
        .join(";");
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[("SDAA_EMU_PERTURB", &faults)],
        &["python", "train.py", "--steps", "6"],
    );
    assert_eq!(p.code, 1, "{}", p.context());
    assert_eq!(p.json["verdict"], "drift", "{}", p.context());
    assert_eq!(p.json["compare"]["verdict"]["pass"], false);
    assert!(p.md.contains("modelzoo diff"), "{}", p.md);
}

#[test]
fn an_original_that_does_not_run_is_exit_2_and_the_port_is_not_run() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("broken");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("train.py"),
        "import torch\nx = torch.ones(2).cuda()\nraise SystemExit(f'bad data {x.sum()}')\n",
    )
    .unwrap();
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py"],
    );
    assert_eq!(p.code, 2, "{}", p.context());
    assert_eq!(p.json["verdict"], "baseline-failed");
    assert!(p.json["candidate"].is_null());
    assert!(
        p.stdout.contains("the original is broken, not the port"),
        "{}",
        p.context()
    );
}

#[test]
fn no_loss_in_the_output_is_exit_2_saying_how_to_point_at_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("quiet");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("train.py"),
        "import torch\nprint(torch.ones(2).cuda().sum())\n",
    )
    .unwrap();
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py"],
    );
    assert_eq!(p.code, 2, "{}", p.context());
    assert_eq!(p.json["verdict"], "no-baseline-loss");
    assert!(p.stdout.contains("--log FILE"), "{}", p.context());
}

#[test]
fn a_non_empty_out_is_refused_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("classic", tmp.path());
    let out = tmp.path().join("busy");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("mine.txt"), "keep me").unwrap();
    let p = port(&src, &out, &[], &["python", "train.py"]);
    assert_eq!(p.code, 2, "{}", p.context());
    assert!(p.stderr.contains("--out is not empty"), "{}", p.context());
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().flatten().collect();
    assert_eq!(left.len(), 1);
    assert_eq!(
        std::fs::read_to_string(out.join("mine.txt")).unwrap(),
        "keep me"
    );
    // And an --out inside the project, and no command at all.
    let p = port(&src, &src.join("ported"), &[], &["python", "train.py"]);
    assert_eq!(p.code, 2, "{}", p.context());
    assert!(p.stderr.contains("inside the project"), "{}", p.context());
    let p = port(&src, &tmp.path().join("x"), &[], &[]);
    assert_eq!(p.code, 2, "{}", p.context());
    assert!(p.stderr.contains("no command to run"), "{}", p.context());
}
