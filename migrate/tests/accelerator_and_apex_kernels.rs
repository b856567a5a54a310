//! Two gaps found on 27 public training scripts: a script that picks its device with
//! `torch.accelerator` got no `import torch_sdaa` (so torch.accelerator never sees the sdaa
//! backend and the script trains on the CPU, silently), and imports of apex's compiled CUDA
//! kernels (`amp_C`, `apex.multi_tensor_apply`, `fused_*_cuda`) were not reported.

use std::path::Path;
use std::process::Command;

use migrate::{migrate_text, FileKind, FileOutcome};

fn py(src: &str) -> FileOutcome {
    migrate_text(src, FileKind::Python)
}

fn rules(out: &FileOutcome) -> Vec<(usize, &'static str)> {
    out.notes.iter().map(|n| (n.line, n.rule)).collect()
}

/// pytorch/examples' current `mnist/main.py` way of choosing the device.
const ACCELERATOR: &str = "\
import argparse
import torch
import torch.nn as nn


def main():
    use_accel = torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else \"cpu\"
    model = nn.Linear(4, 2).to(device)
    print(device, next(model.parameters()).device.type)
";

#[test]
fn torch_accelerator_gets_the_import_and_nothing_else() {
    let out = py(ACCELERATOR);
    assert_eq!(
        out.text,
        ACCELERATOR.replace(
            "import torch\n",
            "import torch\nimport torch_sdaa  # noqa: F401\n"
        )
    );
    assert_eq!(out.rewrites["import-torch-sdaa"], 1);
    assert_eq!(out.rewrites.len(), 1);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    // Migrating the output again changes nothing.
    assert_eq!(py(&out.text).text, out.text);
}

#[test]
fn every_spelling_of_torch_accelerator_gets_the_import() {
    for src in [
        "from torch import accelerator\nd = accelerator.current_accelerator()\n",
        "import torch.accelerator\nd = torch.accelerator.current_accelerator()\n",
        "from torch.accelerator import current_accelerator\nd = current_accelerator()\n",
    ] {
        let out = py(src);
        let first = src.lines().next().unwrap_or("");
        assert_eq!(
            out.text,
            src.replacen(
                first,
                &format!("{first}\nimport torch_sdaa  # noqa: F401"),
                1
            ),
            "{src}"
        );
    }
    // Without a torch import to follow, a person adds it.
    let out = py("def pick(torch):\n    return torch.accelerator.current_accelerator()\n");
    assert_eq!(rules(&out), vec![(1, "import-torch-sdaa")]);
    // Named in prose only: no import, nothing to do.
    let prose = "import torch\n# torch.accelerator.current_accelerator() would pick the card\nx = \"see torch.accelerator\"\n";
    assert_eq!(py(prose).text, prose);
}

#[test]
fn torch_accelerator_calls_that_fail_on_sdaa_are_reported_with_the_sdaa_call() {
    let src = "\
import torch
torch.accelerator.synchronize()
peak = torch.accelerator.max_memory_allocated() / 2**20
free, total = torch.accelerator.get_memory_info()
caps = torch.accelerator.get_device_capability()
";
    let out = py(src);
    assert_eq!(
        rules(&out),
        vec![
            (3, "torch-accelerator"),
            (4, "torch-accelerator"),
            (5, "torch-accelerator")
        ]
    );
    assert!(
        out.notes[0]
            .message
            .contains("call torch.sdaa.max_memory_allocated() instead"),
        "{}",
        out.notes[0].message
    );
    assert!(out.notes[1].message.contains("torch.sdaa.mem_get_info()"));
    assert!(out.notes[2].message.contains("by hand"));
    // The calls are kept (reported, not rewritten); the module gets its import.
    assert_eq!(
        out.text,
        src.replace(
            "import torch\n",
            "import torch\nimport torch_sdaa  # noqa: F401\n"
        )
    );
}

/// The claim the rule rests on, checked with torch 2.11 and the SDAA emulator's torch_sdaa:
/// without the import torch.accelerator reports no usable accelerator here (the script trains
/// on the CPU), with it the script runs on sdaa. Skipped where the venv is not set up.
#[test]
fn with_the_import_torch_accelerator_picks_sdaa_on_the_emulator() {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    if !python.is_file() {
        eprintln!(
            "skipped: {} is missing (run `make setup`)",
            python.display()
        );
        return;
    }
    let run = |src: &str| {
        let out = Command::new(&python)
            .args(["-c", &format!("{src}\nmain()\n")])
            .env("SDAA_VISIBLE_DEVICES", "0")
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout.lines().last().unwrap_or("").to_string()
    };
    let migrated = py(ACCELERATOR).text;
    assert_eq!(run(&migrated), "sdaa sdaa");
    // The original, on this machine without a GPU: the CPU, and nothing says so.
    if run("import torch\ndef main(): print(torch.accelerator.is_available())") == "False" {
        assert_eq!(run(ACCELERATOR), "cpu cpu");
    }
}

/// NVIDIA's and Megatron's apex-using training code: the multi-tensor kernels, the fused
/// optimizers and norms, and a Megatron fused-softmax extension.
const APEX_KERNELS: &str = "\
import torch
import amp_C
from apex import amp_C as kernels
from apex.multi_tensor_apply import multi_tensor_applier
from apex.optimizers import FusedAdam, FusedLAMB
from apex.normalization import FusedLayerNorm
try:
    import fused_layer_norm_cuda
except ImportError:
    fused_layer_norm_cuda = None
import scaled_masked_softmax_cuda

overflow_buf = torch.cuda.IntTensor([0])
norm = multi_tensor_applier(amp_C.multi_tensor_l2norm, overflow_buf, [grads], False)
opt = apex.optimizers.FusedSGD(model.parameters(), lr=0.1)
";

#[test]
fn apex_compiled_kernel_imports_are_reported_with_the_torch_replacement() {
    let out = py(APEX_KERNELS);
    assert_eq!(
        rules(&out),
        vec![
            (2, "apex-kernels"),
            (3, "apex-kernels"),
            (4, "apex-kernels"),
            (5, "apex-kernels"),
            (6, "apex-kernels"),
            (8, "apex-kernels"),
            (11, "apex-kernels"),
            (15, "apex-kernels"),
        ]
    );
    let msg = |line: usize| {
        out.notes
            .iter()
            .find(|n| n.line == line)
            .map_or("", |n| n.message.as_str())
    };
    assert!(msg(2).starts_with("`amp_C` is apex's compiled CUDA code, which has no SDAA build; use instead: torch's foreach ops"), "{}", msg(2));
    assert!(msg(3).contains("`apex.amp_C`"), "{}", msg(3));
    assert!(msg(4).contains("foreach"), "{}", msg(4));
    assert!(
        msg(5).contains("torch.optim's Adam / AdamW / SGD"),
        "{}",
        msg(5)
    );
    assert!(msg(6).contains("torch.nn.LayerNorm"), "{}", msg(6));
    assert!(msg(8).contains("torch.nn.LayerNorm"), "{}", msg(8));
    assert!(
        msg(11).contains("scaled_dot_product_attention"),
        "{}",
        msg(11)
    );
    // Only the device code is rewritten; the apex lines stay for a person.
    assert_eq!(out.rewrites.get("torch-cuda"), Some(&1));
    assert!(out.text.contains("\nimport amp_C\n"));
}

#[test]
fn extension_like_names_count_only_in_apex_using_code() {
    // A project's own `*_cuda` module with no apex around is not guessed at.
    let out = py("import torch\nimport utils_cuda\nx = utils_cuda.f(t.cuda())\n");
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    let out = py("import apex\nimport fused_bias_gelu_cuda\n");
    assert_eq!(rules(&out), vec![(1, "apex-manual"), (2, "apex-kernels")]);
}
