//! The rewrite never leaves code that cannot run: apex amp in the shapes real training code
//! has (NVIDIA BERT's `run_squad.py`, timm's `utils/cuda.py` — small files in their shape,
//! written for these tests) is either ported completely or left exactly as it was and reported
//! line by line. Plus what the rules used to miss: `is_cuda`, `dist.Backend.NCCL`,
//! `torch.backends.cuda`, NVML / nvidia-smi / DALI, `NCCL_*` variables, docstring imports.

use migrate::{migrate_text, FileKind, FileOutcome};

fn py(src: &str) -> FileOutcome {
    migrate_text(src, FileKind::Python)
}

fn notes(out: &FileOutcome, rule: &str) -> Vec<usize> {
    out.notes
        .iter()
        .filter(|n| n.rule == rule)
        .map(|n| n.line)
        .collect()
}

/// Independent check with CPython: the rewritten file compiles (skipped without python3).
fn assert_compiles(src: &str) {
    let Ok(mut child) = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; compile(sys.stdin.read(), 'x.py', 'exec')",
        ])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        return;
    };
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(src.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{src}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `run_squad.py` shape: amp.initialize over two lines under `if args.fp16:`, scale_loss in
/// one branch, `optimizer.step()` on both paths, `amp.master_params`.
const BERT: &str = "\
import torch
from apex import amp


def prepare(args, model, optimizer):
    model.cuda()
    if args.fp16:
        model, optimizer = amp.initialize(model, optimizer, opt_level=\"O2\",
                                          keep_batchnorm_fp32=False, loss_scale=\"dynamic\")
    return model, optimizer


def train(args, model, optimizer, batches):
    for batch in batches:
        loss = model(*[t.cuda() for t in batch])
        if args.fp16:
            with amp.scale_loss(loss, optimizer) as scaled_loss:
                scaled_loss.backward()
        else:
            loss.backward()
        if args.fp16:
            torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)
        optimizer.step()
        optimizer.zero_grad()
";

#[test]
fn bert_shape_apex_is_left_untouched_and_every_amp_line_reported() {
    let out = py(BERT);
    let want = BERT
        .replace(
            "import torch\n",
            "import torch\nimport torch_sdaa  # noqa: F401\n",
        )
        .replace(".cuda()", ".sdaa()");
    assert_eq!(out.text, want);
    assert!(!out.rewrites.contains_key("apex-amp"));
    // The import (with the reason), the initialize, the scale_loss block and master_params.
    assert_eq!(notes(&out, "apex-manual"), vec![2, 8, 17, 22]);
    let reason = &out.notes.iter().find(|n| n.line == 2).unwrap().message;
    assert!(reason.contains("amp.initialize"), "{reason}");
    assert_compiles(&out.text);
}

#[test]
fn grad_scaler_that_would_exist_on_one_branch_only_is_refused() {
    // Every amp call has the convertible one-line shape, so `amp` would vanish entirely; but the
    // GradScaler would be created under `if args.fp16:` and stepped on the fp32 path too.
    let src = "\
import torch
from apex import amp


def train(args, model, optimizer, batches):
    if args.fp16:
        model, optimizer = amp.initialize(model, optimizer, opt_level=\"O1\")
    for batch in batches:
        loss = model(batch)
        if args.fp16:
            with amp.scale_loss(loss, optimizer) as scaled_loss:
                scaled_loss.backward()
        else:
            loss.backward()
        optimizer.step()
";
    let out = py(src);
    assert_eq!(out.text, src);
    assert_eq!(notes(&out, "apex-manual"), vec![2, 7, 11]);
    assert!(
        out.notes[0].message.contains("every path"),
        "{}",
        out.notes[0].message
    );

    // The same loop with the scaler created unconditionally is ported; the step is still
    // refused when it runs outside the scaled branch.
    let unconditional = src.replace(
        "    if args.fp16:\n        model, optimizer = amp",
        "    if True:\n        pass\n    model, optimizer = amp",
    );
    let out = py(&unconditional);
    assert_eq!(out.text, unconditional);
    assert!(
        out.notes[0].message.contains("not scaled"),
        "{}",
        out.notes[0].message
    );
}

/// timm `utils/cuda.py` shape: the import sits in a try/except fallback, the scaler class
/// uses `amp` in another function than any initialize.
const TIMM: &str = "\
\"\"\" CUDA / AMP utils \"\"\"
import torch

try:
    from apex import amp
    has_apex = True
except ImportError:
    amp = None
    has_apex = False


class ApexScaler:
    def __call__(self, loss, optimizer, clip_grad=None):
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        if clip_grad is not None:
            torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), clip_grad)
        optimizer.step()

    def state_dict(self):
        return amp.state_dict()


class NativeScaler:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()
";

#[test]
fn timm_shape_import_fallback_is_kept_and_reported() {
    let out = py(TIMM);
    let want = TIMM
        .replace(
            "import torch\n",
            "import torch\nimport torch_sdaa  # noqa: F401\n",
        )
        .replace("torch.cuda.amp", "torch.sdaa.amp");
    assert_eq!(out.text, want);
    assert!(out
        .text
        .contains("try:\n    from apex import amp\n    has_apex = True\n"));
    assert!(!out.text.contains("scaler.step"));
    assert_eq!(notes(&out, "apex-manual"), vec![5, 8, 14, 17, 21]);
    assert!(
        out.notes[0].message.contains("inside a block"),
        "{}",
        out.notes[0].message
    );
    assert_compiles(&out.text);
}

#[test]
fn names_the_rewrite_would_orphan_or_clash_with_refuse_it() {
    // `scaled_loss` used after its block.
    let src = "import torch\nfrom apex import amp\nmodel, opt = amp.initialize(model, opt)\nwith amp.scale_loss(loss, opt) as scaled_loss:\n    scaled_loss.backward()\nprint(scaled_loss)\nopt.step()\n";
    let out = py(src);
    assert_eq!(out.text, src);
    assert!(
        out.notes[0].message.contains("`scaled_loss`"),
        "{}",
        out.notes[0].message
    );
    // A `scaler` of the file's own.
    let src = "import torch\nfrom apex import amp\nscaler = 2\nmodel, opt = amp.initialize(model, opt)\nwith amp.scale_loss(loss, opt) as s:\n    s.backward()\nopt.step()\n";
    let out = py(src);
    assert_eq!(out.text, src);
    assert!(
        out.notes[0].message.contains("`scaler`"),
        "{}",
        out.notes[0].message
    );
    // `from apex import amp, optimizers` is not removed either.
    let src =
        "import torch\nfrom apex import amp, optimizers\nmodel, opt = amp.initialize(model, opt)\n";
    let out = py(src);
    assert_eq!(out.text, src);
    assert_eq!(notes(&out, "apex-manual"), vec![2, 3]);
}

#[test]
fn converted_apex_binds_torch_and_ends_lines_properly() {
    // `from torch import nn` does not bind `torch`: the GradScaler needs an `import torch`.
    // The last line has no newline: `scaler.update()` still gets a line of its own.
    let src = "from torch import nn\nfrom apex import amp\n\n\ndef step(model, opt, loss):\n    model, opt = amp.initialize(model, opt)\n    with amp.scale_loss(loss, opt) as s:\n        s.backward()\n    opt.step()";
    let out = py(src);
    assert_eq!(
        out.text,
        "from torch import nn\nimport torch_sdaa  # noqa: F401\nimport torch\n\n\ndef step(model, opt, loss):\n    scaler = torch.sdaa.amp.GradScaler()\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()"
    );
    assert_eq!(out.rewrites["apex-amp"], 4);
    assert_compiles(&out.text);
}

#[test]
fn import_torch_sdaa_never_goes_into_a_docstring() {
    // The docstring is prose: its example is neither a place for the import nor rewritten.
    let src = "\"\"\"Train.\n\nExample:\n    import torch\n    model.cuda()\n\"\"\"\nimport os\nimport torch\nx = torch.zeros(1).cuda()\n";
    let out = py(src);
    assert_eq!(
        out.text,
        "\"\"\"Train.\n\nExample:\n    import torch\n    model.cuda()\n\"\"\"\nimport os\nimport torch\nimport torch_sdaa  # noqa: F401\nx = torch.zeros(1).sdaa()\n"
    );
    assert_compiles(&out.text);
}

#[test]
fn apex_ddp_import_of_more_names_is_left_and_reported() {
    let src = "import torch\nfrom apex.parallel import DistributedDataParallel, SyncBatchNorm\nm = apex.parallel.DistributedDataParallel(m)\n";
    let out = py(src);
    // The import stays (torch has no SyncBatchNorm there); the attribute spelling is ported.
    assert_eq!(
        out.text,
        "import torch\nfrom apex.parallel import DistributedDataParallel, SyncBatchNorm\nm = torch.nn.parallel.DistributedDataParallel(m)\n"
    );
    assert_eq!(notes(&out, "apex-manual"), vec![2]);
    // Without `import torch` the attribute spelling is not rewritten into a NameError.
    let src = "import apex\nm = apex.parallel.DistributedDataParallel(m)\n";
    assert_eq!(py(src).text, src);
}

#[test]
fn is_cuda_and_backend_nccl_are_rewritten_in_code() {
    let src = "import torch\nimport torch.distributed as dist\nif x.is_cuda and dist.get_backend() == dist.Backend.NCCL:\n    print(\"uses dist.Backend.NCCL\")\n";
    let out = py(src);
    assert_eq!(
        out.text,
        "import torch\nimport torch_sdaa  # noqa: F401\nimport torch.distributed as dist\nif x.is_sdaa and dist.get_backend() == 'tccl':\n    print(\"uses dist.Backend.NCCL\")\n"
    );
    assert_eq!(out.rewrites["is-cuda"], 1);
    assert_eq!(out.rewrites["ddp-backend"], 1);
    assert_compiles(&out.text);
}

#[test]
fn cuda_only_settings_and_nvidia_tools_are_reported() {
    let src = "\
\"\"\"Mentions nvidia-smi and torch.backends.cuda in prose: not reported.\"\"\"
import subprocess
import torch
import pynvml
from nvidia.dali.pipeline import Pipeline
torch.backends.cuda.matmul.allow_tf32 = True
with torch.backends.cuda.sdp_kernel(enable_flash=False):
    pass
os.environ[\"NCCL_SOCKET_IFNAME\"] = \"eth0\"
subprocess.run([\"nvidia-smi\", \"-L\"])
";
    let out = py(src);
    assert_eq!(out.text, src, "report-only rules change nothing");
    assert_eq!(notes(&out, "nvidia-only"), vec![4, 5, 10]);
    assert_eq!(notes(&out, "torch-backends-cuda"), vec![6, 7]);
    assert_eq!(notes(&out, "nccl-env"), vec![9]);
    let msgs: Vec<&str> = out.notes.iter().map(|n| n.message.as_str()).collect();
    assert!(msgs
        .iter()
        .any(|m| m.contains("torch.backends.cuda.matmul.allow_tf32")));
    assert!(msgs
        .iter()
        .any(|m| m.contains("torch.backends.cuda.sdp_kernel")));
    assert!(msgs.iter().any(|m| m.contains("NCCL_SOCKET_IFNAME")));

    let sh = "#!/bin/bash\n# NCCL_DEBUG=INFO (commented out)\nexport NCCL_IB_DISABLE=1 NCCL_DEBUG=INFO\nnvidia-smi\n";
    let out = migrate_text(sh, FileKind::Shell);
    assert_eq!(out.text, sh);
    assert_eq!(notes(&out, "nccl-env"), vec![3, 3]);
    assert_eq!(notes(&out, "nvidia-only"), vec![4]);
}
