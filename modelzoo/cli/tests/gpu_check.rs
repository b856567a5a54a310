//! scripts/gpu-check.sh, the one script a session lent a GPU runs (issue #18 item 4): its dry
//! run lists every check the issue asks for with the commands it would run, and a check it
//! does not know is refused. The checks themselves need a GPU and run only there.

use std::path::Path;
use std::process::{Command, Output};

fn gpu_check(args: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new("bash")
        .arg(root.join("scripts/gpu-check.sh"))
        .args(args)
        .current_dir(&root)
        .output()
        .expect("run bash scripts/gpu-check.sh")
}

#[test]
fn dry_run_lists_every_check_with_its_commands() {
    let out = gpu_check(&["--dry-run"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (id, needle) in [
        ("device", "modelzoo env --json"),
        ("resnet50-bs64", "--batch_size 64"),
        ("resnet50-bs256", "--batch_size 256"),
        ("resnet50-bs256-channels-last", "--channels_last"),
        ("resnet50-jpeg-amp", "--dataset_path"),
        ("gpt345m-bf16", "--amp_dtype bf16"),
        ("ddp-nccl-1gpu", "WORLD_SIZE=1"),
        ("compare-cuda-cpu", "--memory_format nchw"),
        ("compare-cuda-cpu", "NVIDIA_TF32_OVERRIDE=0"),
    ] {
        let section = stdout
            .split(&format!("[{id}]"))
            .nth(1)
            .unwrap_or_else(|| panic!("check {id} not listed:\n{stdout}"));
        let section = section.split("\n[").next().unwrap();
        assert!(
            section.contains(needle),
            "check {id} lacks {needle:?}:\n{section}"
        );
        assert!(
            section.contains("--device cuda"),
            "check {id} does not run on cuda:\n{section}"
        );
    }
    assert!(
        stdout.contains("resnet_reference.py"),
        "no PyTorch eager reference"
    );
}

#[test]
fn an_unknown_check_is_refused_with_the_list() {
    let out = gpu_check(&["--only", "nope", "--dry-run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown check 'nope'") && stderr.contains("ddp-nccl-1gpu"),
        "{stderr}"
    );
}
