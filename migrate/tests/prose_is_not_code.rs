//! Prose — comments, docstrings, the text of string literals, an f-string's literal parts — is
//! neither rewritten nor reported (the gap found on 27 public training scripts: an
//! `ImportError("Please install apex ...")` message was an apex finding, a help text mentioning
//! cuDNN a cudnn finding). String literals that *are* data a rule knows — a device, a backend,
//! an environment variable, a command, a `.cu` source — still are.

use migrate::{migrate_text, FileKind, FileOutcome};

fn py(src: &str) -> FileOutcome {
    migrate_text(src, FileKind::Python)
}

fn rules(out: &FileOutcome) -> Vec<(usize, &'static str)> {
    out.notes.iter().map(|n| (n.line, n.rule)).collect()
}

/// In the shape of NVIDIA's and Hugging Face's example scripts: every line mentions CUDA,
/// NCCL, apex or nvidia-smi in prose only.
const PROSE: &str = r#""""Train on cuda with torch.cuda.amp; set NCCL_DEBUG=INFO and watch nvidia-smi.

Example:
    model.cuda()
    torch.backends.cudnn.benchmark = True
"""
import torch

try:
    import apex  # noqa: apex is optional; torch.cuda.amp otherwise
except ImportError:
    raise ImportError("Please install apex from https://www.github.com/nvidia/apex to use fp16 training.")

# model = model.cuda()  (the old way)
parser.add_argument("--fp16", help="use apex or torch.cuda.amp; see torch.backends.cudnn.benchmark")
parser.add_argument("--gpus", help="GPU ids, as in CUDA_VISIBLE_DEVICES; nvidia-smi lists them")
logger.info("NCCL_DEBUG is not set; the nccl backend is quiet")
print(f"running on cuda device {torch.cuda.current_device()} of {n} (see kernel.cu)")
"#;

#[test]
fn comments_docstrings_and_string_text_are_left_alone() {
    let out = py(PROSE);
    // Only code changes: the f-string's expression, and the import the device use needs.
    let want = PROSE
        .replace(
            "import torch\n",
            "import torch\nimport torch_sdaa  # noqa: F401\n",
        )
        .replace(
            "{torch.cuda.current_device()}",
            "{torch.sdaa.current_device()}",
        );
    assert_eq!(out.text, want);
    assert_eq!(out.rewrites.get("torch-cuda"), Some(&1));
    // `import apex` is apex use in code; nothing else is a finding.
    assert_eq!(rules(&out), vec![(10, "apex-manual")]);
}

#[test]
fn string_values_that_are_data_are_still_rewritten_and_reported() {
    let src = r#"import os
import subprocess
import torch
device = torch.device("cuda:0" if args.gpu else "cpu")
name = f"cuda:{rank}"
dist.init_process_group(backend="nccl")
os.environ["CUDA_VISIBLE_DEVICES"] = "0"
env = dict(os.environ, CUDA_VISIBLE_DEVICES="1")
os.system(f"CUDA_VISIBLE_DEVICES={gpu} python train.py")
os.environ["NCCL_IB_DISABLE"] = "1"
subprocess.run("NCCL_DEBUG=INFO torchrun train.py", shell=True)
out = subprocess.check_output(["nvidia-smi", "-L"])
mem = os.popen("/usr/bin/nvidia-smi --query-gpu=memory.used --format=csv").read()
"#;
    let out = py(src);
    assert_eq!(
        out.text,
        r#"import os
import subprocess
import torch
import torch_sdaa  # noqa: F401
device = torch.device("sdaa:0" if args.gpu else "cpu")
name = f"sdaa:{rank}"
dist.init_process_group(backend="tccl")
os.environ["SDAA_VISIBLE_DEVICES"] = "0"
env = dict(os.environ, SDAA_VISIBLE_DEVICES="1")
os.system(f"SDAA_VISIBLE_DEVICES={gpu} python train.py")
os.environ["NCCL_IB_DISABLE"] = "1"
subprocess.run("NCCL_DEBUG=INFO torchrun train.py", shell=True)
out = subprocess.check_output(["nvidia-smi", "-L"])
mem = os.popen("/usr/bin/nvidia-smi --query-gpu=memory.used --format=csv").read()
"#
    );
    assert_eq!(out.rewrites["device-string"], 2);
    assert_eq!(out.rewrites["visible-devices"], 3);
    assert_eq!(
        rules(&out),
        vec![
            (10, "nccl-env"),
            (11, "nccl-env"),
            (12, "nvidia-only"),
            (13, "nvidia-only")
        ]
    );
    assert!(out.notes[0].message.contains("NCCL_IB_DISABLE"));
    assert!(out.notes[1].message.contains("NCCL_DEBUG"));
}

#[test]
fn a_cuda_source_is_reported_where_extensions_are_built_not_in_prose() {
    let build = "from torch.utils.cpp_extension import load\next = load(\n    name=\"fused\",\n    sources=[\"fused.cpp\", \"fused_kernel.cu\"],\n)\n";
    assert_eq!(rules(&py(build)), vec![(4, "cpp-extension-cuda")]);
    let prose = "import torch\nprint(\"the kernel is in fused_kernel.cu\", t.cuda())\n";
    assert!(rules(&py(prose)).is_empty());
}

#[test]
fn multi_line_strings_and_docstrings_in_functions_stay_prose() {
    let src = "import torch\n\n\ndef f(x):\n    '''Move x with x.cuda(); NCCL_DEBUG helps.'''\n    usage = \"\"\"\n    CUDA_VISIBLE_DEVICES=0 python f.py\n    \"\"\"\n    return x.cuda()  # was x.cuda()\n";
    let out = py(src);
    // The usage text is data (a command setting the variable): rewritten, on its own line.
    assert_eq!(
        out.text,
        "import torch\nimport torch_sdaa  # noqa: F401\n\n\ndef f(x):\n    '''Move x with x.cuda(); NCCL_DEBUG helps.'''\n    usage = \"\"\"\n    SDAA_VISIBLE_DEVICES=0 python f.py\n    \"\"\"\n    return x.sdaa()  # was x.cuda()\n"
    );
    assert_eq!(out.rewrites["cuda-method"], 1);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
}

#[test]
fn shell_comment_lines_are_prose_too() {
    let sh = "#!/bin/bash\n# usage: CUDA_VISIBLE_DEVICES=0 bash train.sh --device cuda\nexport CUDA_VISIBLE_DEVICES=0\npython train.py --device cuda\n";
    let out = migrate_text(sh, FileKind::Shell);
    assert_eq!(
        out.text,
        "#!/bin/bash\n# usage: CUDA_VISIBLE_DEVICES=0 bash train.sh --device cuda\nexport SDAA_VISIBLE_DEVICES=0\npython train.py --device sdaa\n"
    );
}
