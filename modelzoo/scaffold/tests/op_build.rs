//! `modelzoo op new` end to end, the one test that builds a scaffolded op library (about a
//! minute of C++): scaffolded into a temporary directory, built by its own first import with
//! torch's cpp_extension (the project's .venv), its example op run on the CPU (forward and
//! gradient against x + alpha * y), its unimplemented sdaa kernel — the SDAA emulator's
//! PrivateUse1 device — stopped with the scaffold's clear error, and its generated unittest
//! suite run.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const SCRIPT: &str = r#"
import sys
import torch
import torch_sdaa  # noqa: F401  (registers the sdaa device before any backward)
sys.path.insert(0, sys.argv[1])
import zoo_demo_ops as ops

x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
y = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
out = ops.scale_add(x, y, 0.5)
err = (out - (x + 0.5 * y)).abs().max().item()
assert err < 1e-12, f"cpu forward off by {err}"
out.sum().backward()
assert torch.allclose(x.grad, torch.ones_like(x)), x.grad
assert torch.allclose(y.grad, torch.full_like(y, 0.5)), y.grad
half = ops.scale_add(x.detach().half(), y.detach().half(), 2.0)
assert half.dtype == torch.float16
assert (half.double() - (x + 2 * y)).abs().max().item() < 1e-2
try:
    ops.scale_add(x.detach().float().to("sdaa"), y.detach().float().to("sdaa"), 1.0)
except RuntimeError as e:
    print("sdaa error:", str(e).splitlines()[0])
else:
    raise AssertionError("the unimplemented sdaa kernel ran")
print("cpu ok")
"#;

#[test]
fn scaffolded_library_builds_runs_on_cpu_and_refuses_unwritten_sdaa_kernel() {
    let python = root().join(".venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `make setup`",
        python.display()
    );
    let emulator = root().join("target/sdaa-emulator");
    assert!(
        emulator.join("python/torch_sdaa").is_dir(),
        "the SDAA emulator is missing: run scripts/build-emulator.sh (make build)"
    );
    let tmp = std::env::temp_dir().join(format!("modelzoo-op-build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let dir = tmp.join("zoo_demo_ops");
    let plan = modelzoo_scaffold::op::plan("zoo_demo_ops", &dir).unwrap();
    modelzoo_scaffold::op::apply(&plan).unwrap();

    let run = |args: &[&str]| {
        Command::new(&python)
            .args(args)
            .current_dir(&dir)
            .env("SDAA_HOME", &emulator)
            .env("TORCH_SDAA_BANNER", "0")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .expect("run .venv/bin/python")
    };
    let out = run(&["-W", "ignore", "-c", SCRIPT, dir.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("cpu ok"), "{stdout}");
    assert!(
        stdout.contains(
            "sdaa error: zoo_demo_ops: the sdaa kernel is not implemented yet: write it in \
             zoo_demo_ops/csrc/sdaa.cpp (scale_add_sdaa)"
        ),
        "{stdout}"
    );
    // Built into the package's own cache.
    assert!(dir.join("zoo_demo_ops/.cache").is_dir());

    // The generated tests, against the build just made: the CPU ones pass, the sdaa one is
    // skipped with the kernel's error.
    let out = run(&["-m", "unittest", "discover", "-s", "tests", "-v"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("OK (skipped=1)"), "{stderr}");
    assert!(
        stderr.contains("skipped 'zoo_demo_ops: the sdaa kernel is not implemented yet"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
