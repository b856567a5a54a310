//! Idioms of public training code that the migration got wrong (issue #37), each in the shape
//! the real code has: pytorch/examples, timm's apex guards, NVIDIA DeepLearningExamples'
//! Triton Inference Server deployment, DataParallel. The fixtures are written here, in those
//! shapes; no public code is copied.

use std::path::Path;

use migrate::{migrate_text, FileKind, FileOutcome, SDAA_IMPORT};

fn py(src: &str) -> FileOutcome {
    migrate_text(src, FileKind::Python)
}

fn rules(out: &FileOutcome) -> Vec<(usize, &'static str)> {
    out.notes.iter().map(|n| (n.line, n.rule)).collect()
}

// ---- a torch import on a combined line --------------------------------------------------

#[test]
fn a_combined_import_line_counts_as_importing_torch() {
    // word_language_model / old mnist shapes: several modules on one `import` line.
    for (src, want) in [
        (
            "import argparse, torch, torch.nn as nn\nx = y.cuda()\n",
            format!("import argparse, torch, torch.nn as nn\n{SDAA_IMPORT}\nx = y.sdaa()\n"),
        ),
        (
            "import os, torch\nd = torch.device('cuda')\n",
            format!("import os, torch\n{SDAA_IMPORT}\nd = torch.device('sdaa')\n"),
        ),
        (
            "import os; import torch\nx = y.cuda()\n",
            format!("import os; import torch\n{SDAA_IMPORT}\nx = y.sdaa()\n"),
        ),
        (
            "try:\n    import numpy as np, torch as th\nexcept ImportError:\n    th = None\nx = th.zeros(1).cuda()\n",
            format!("try:\n    import numpy as np, torch as th\n    {SDAA_IMPORT}\nexcept ImportError:\n    th = None\nx = th.zeros(1).sdaa()\n"),
        ),
    ] {
        let out = py(src);
        assert_eq!(out.text, want, "{src}");
        assert!(
            !out.notes.iter().any(|n| n.rule == "import-torch-sdaa"),
            "{src}: {:?}",
            out.notes
        );
        assert_eq!(out.rewrites["import-torch-sdaa"], 1, "{src}");
        // Idempotent.
        assert_eq!(py(&out.text).text, out.text, "{src}");
    }
    // A module that imports `torchvision`, not torch, still gets the note.
    let out = py("import os, torchvision\nx = y.cuda()\n");
    assert_eq!(rules(&out), vec![(1, "import-torch-sdaa")]);
}

#[test]
fn a_combined_import_binds_torch_for_the_apex_ddp_rewrite() {
    let src = "import os, torch\nimport apex\nm = apex.parallel.DistributedDataParallel(m)\n";
    let out = py(src);
    assert!(
        out.text
            .contains("m = torch.nn.parallel.DistributedDataParallel(m)"),
        "{}",
        out.text
    );
    // `import torch as th` does not bind `torch`: no rewrite that would name it.
    let src = "import os, torch as th\nimport apex\nm = apex.parallel.DistributedDataParallel(m)\n";
    assert!(py(src)
        .text
        .contains("apex.parallel.DistributedDataParallel"));
}

// ---- the inserted import is not an unused import to pyflakes ----------------------------

#[test]
fn the_inserted_import_carries_noqa_f401() {
    assert!(SDAA_IMPORT.starts_with("import torch_sdaa"));
    assert!(SDAA_IMPORT.ends_with("# noqa: F401"));
    let out = py("import torch\nx = t.cuda()\n");
    let added: Vec<&str> = out
        .text
        .lines()
        .filter(|l| l.contains("torch_sdaa"))
        .collect();
    assert_eq!(added, vec![SDAA_IMPORT]);
    // A module that already imports torch_sdaa (with or without the noqa) gets no second one.
    for ported in [
        "import torch\nimport torch_sdaa\nx = t.sdaa()\n",
        "import torch\nimport torch_sdaa  # noqa: F401\nx = t.sdaa()\n",
    ] {
        assert_eq!(py(ported).text, ported);
    }
}

// ---- CUDA-only guards of CUDA-only libraries --------------------------------------------

/// timm's optimizer factory: fused optimizers are apex's, and the assert says so.
const TIMM_ASSERT: &str = "\
import torch
from apex.optimizers import FusedAdam


def create_optimizer(opt, params):
    if opt.startswith('fused'):
        assert torch.cuda.is_available(), 'CUDA required for APEX optimizers'
        return FusedAdam(params)
    return torch.optim.AdamW(params)
";

#[test]
fn an_assert_that_guards_apex_stays_cuda() {
    let out = py(TIMM_ASSERT);
    assert_eq!(out.text, TIMM_ASSERT, "nothing to rewrite here");
    assert!(out.rewrites.is_empty(), "{:?}", out.rewrites);
    let guard: Vec<_> = out
        .notes
        .iter()
        .filter(|n| n.rule == "cuda-only-guard")
        .collect();
    assert_eq!(guard.len(), 1, "{:?}", out.notes);
    assert_eq!(guard[0].line, 7);
    assert!(guard[0].message.contains("apex"), "{}", guard[0].message);
    assert!(
        guard[0].message.contains("torch.cuda.is_available()"),
        "{}",
        guard[0].message
    );
    // The apex import is still reported for what it is.
    assert!(rules(&out).contains(&(2, "apex-kernels")));
}

#[test]
fn a_check_that_raises_for_a_cuda_only_library_stays_cuda() {
    let src = "\
import torch
if args.fused_lamb:
    if not torch.cuda.is_available():
        raise RuntimeError('FusedLAMB needs apex built with CUDA')
    from apex.optimizers import FusedLAMB
if not torch.cuda.is_available():
    raise RuntimeError('this script needs a GPU')
";
    let out = py(src);
    assert!(
        out.text.contains(
            "    if not torch.cuda.is_available():\n        raise RuntimeError('FusedLAMB"
        ),
        "{}",
        out.text
    );
    // A check that only names the GPU is device selection: ported.
    assert!(
        out.text
            .contains("\nif not torch.sdaa.is_available():\n    raise RuntimeError('this script"),
        "{}",
        out.text
    );
    let guard: Vec<_> = out
        .notes
        .iter()
        .filter(|n| n.rule == "cuda-only-guard")
        .collect();
    assert_eq!(guard.len(), 1, "{:?}", out.notes);
    assert_eq!(guard[0].line, 3);
    assert!(
        guard[0].message.contains("it raises"),
        "{}",
        guard[0].message
    );
}

#[test]
fn blocks_that_guard_cuda_only_libraries_stay_cuda_and_the_rest_is_ported() {
    let src = "\
import torch
import torch.backends.cudnn as cudnn
try:
    import cupy
    HAS_CUPY = torch.cuda.is_available()
except ImportError:
    HAS_CUPY = False

if torch.cuda.is_available() and has_apex:
    overflow_buf = torch.cuda.IntTensor([0])
else:
    overflow_buf = None

if torch.cuda.is_available():
    import amp_C
    scale = amp_C.multi_tensor_scale

if torch.cuda.device_count() > 0:
    cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True

model = model.cuda()
";
    let out = py(src);
    let want = format!(
        "\
import torch
{SDAA_IMPORT}
import torch.backends.cudnn as cudnn
try:
    import cupy
    HAS_CUPY = torch.cuda.is_available()
except ImportError:
    HAS_CUPY = False

if torch.cuda.is_available() and has_apex:
    overflow_buf = torch.cuda.IntTensor([0])
else:
    overflow_buf = None

if torch.cuda.is_available():
    import amp_C
    scale = amp_C.multi_tensor_scale

if torch.cuda.device_count() > 0:
    cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True

model = model.sdaa()
"
    );
    assert_eq!(out.text, want);
    let guards: Vec<(usize, &str)> = out
        .notes
        .iter()
        .filter(|n| n.rule == "cuda-only-guard")
        .map(|n| {
            let lib = ["CuPy", "apex's compiled kernels", "apex", "cuDNN"]
                .into_iter()
                .find(|l| n.message.contains(l))
                .unwrap_or("?");
            (n.line, lib)
        })
        .collect();
    assert_eq!(
        guards,
        vec![
            (5, "CuPy"),
            (9, "apex"),
            (14, "apex's compiled kernels"),
            (18, "cuDNN")
        ]
    );
    // Findings inside a kept block are still made (the cudnn flag, the amp_C import).
    assert!(
        rules(&out).contains(&(19, "cudnn-flag")),
        "{:?}",
        rules(&out)
    );
    assert!(
        rules(&out).contains(&(15, "apex-kernels")),
        "{:?}",
        rules(&out)
    );
    assert_eq!(out.rewrites.get("torch-cuda"), None);
}

#[test]
fn a_guard_that_selects_the_device_is_ported_even_next_to_a_cuda_only_library() {
    // Device selection is what the port is for: these are rewritten, whatever else they name.
    let src = "\
import torch
device = 'cuda' if torch.cuda.is_available() and has_apex else 'cpu'
if torch.cuda.is_available():
    cudnn.benchmark = True
    model.cuda()
if torch.cuda.is_available():
    cudnn.benchmark = True
    n = torch.cuda.device_count()
";
    let out = py(src);
    assert!(
        out.text
            .contains("device = 'sdaa' if torch.sdaa.is_available() and has_apex else 'cpu'"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains(
            "if torch.sdaa.is_available():\n    cudnn.benchmark = True\n    model.sdaa()"
        ),
        "{}",
        out.text
    );
    // Not settings only (it counts the devices): ported.
    assert!(
        out.text.contains("    n = torch.sdaa.device_count()"),
        "{}",
        out.text
    );
    assert!(
        !out.notes.iter().any(|n| n.rule == "cuda-only-guard"),
        "{:?}",
        out.notes
    );
}

#[test]
fn a_plain_availability_check_is_still_ported() {
    let src = "import torch\nuse_cuda = args.cuda and torch.cuda.is_available()\nif torch.cuda.is_available():\n    print('GPU')\n";
    let out = py(src);
    assert_eq!(
        out.text,
        format!("import torch\n{SDAA_IMPORT}\nuse_cuda = args.cuda and torch.sdaa.is_available()\nif torch.sdaa.is_available():\n    print('GPU')\n")
    );
    assert!(out.notes.is_empty(), "{:?}", out.notes);
}

// ---- Triton Inference Server is not OpenAI Triton ---------------------------------------

/// A Triton client script in DeepLearningExamples' shape: the server's enum of accelerators
/// holds a `"cuda"` value that configures the server.
const TRITON_CLIENT: &str = "\
import argparse
from enum import Enum

import torch
import tritonclient.grpc as grpcclient


class Accelerator(Enum):
    AMP = \"amp\"
    CUDA = \"cuda\"
    TRT = \"trt\"


def infer(x):
    client = grpcclient.InferenceServerClient(url=\"localhost:8001\")
    return client.infer(\"model\", [x.cuda()])
";

#[test]
fn triton_inference_server_code_is_left_as_is_and_reported_once() {
    let out = py(TRITON_CLIENT);
    assert_eq!(out.text, TRITON_CLIENT);
    assert!(out.rewrites.is_empty());
    assert_eq!(rules(&out), vec![(5, "triton-server")]);
    assert!(
        out.notes[0].message.contains("imports `tritonclient.grpc`"),
        "{}",
        out.notes[0].message
    );
    // The Python backend of a model repository.
    let backend = "import json\nimport torch\nimport triton_python_backend_utils as pb_utils\n\n\nclass TritonPythonModel:\n    def initialize(self, args):\n        self.device = 'cuda' if args['model_instance_kind'] == 'GPU' else 'cpu'\n";
    let out = py(backend);
    assert_eq!(out.text, backend);
    assert_eq!(rules(&out), vec![(3, "triton-server")]);
    // `pb_utils` reached without its import (a helper module of the backend).
    let helper = "def respond(t):\n    return pb_utils.InferenceResponse(output_tensors=[t])\n";
    assert_eq!(rules(&py(helper)), vec![(2, "triton-server")]);
    // The server's packages named in prose only are nothing.
    let prose = "import torch\n# served with tritonclient; see pb_utils\nx = y.cuda()\n";
    let out = py(prose);
    assert!(out.text.contains("y.sdaa()"));
    assert!(!out.notes.iter().any(|n| n.rule == "triton-server"));
}

#[test]
fn openai_triton_is_still_reported_and_other_triton_packages_are_not() {
    let src = "\
import triton
import triton.language as tl
from triton import cdiv
from triton.deployment_toolkit.core import Format
import triton.deployer_lib as deployer_lib


@triton.jit
def add(x, y):
    pass
";
    let out = py(src);
    assert_eq!(
        rules(&out),
        vec![(1, "triton"), (2, "triton"), (3, "triton"), (8, "triton")]
    );
}

fn write_tree(root: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn found(report: &migrate::Report) -> Vec<(String, usize, &'static str)> {
    report
        .findings
        .iter()
        .map(|f| (f.path.display().to_string(), f.line, f.rule))
        .collect()
}

/// A project tree in the shape of DeepLearningExamples' ConvNets: training code at the top, a
/// `triton/` directory of Inference Server deployment (a client importing the server's package,
/// a toolkit with a `"cuda"` enum value, a deployer importing `triton.deployer_lib`, a launch
/// script), and a model repository.
#[test]
fn a_triton_deployment_directory_and_a_model_repository_are_left_as_is() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write_tree(
        root,
        &[
            (
                "train.py",
                "import torch\nimport triton.deployer_lib\nmodel = model.cuda()\n",
            ),
            (
                "triton/client.py",
                "import torch\nimport tritongrpcclient\nx = torch.zeros(1).cuda()\n",
            ),
            (
                "triton/deployment_toolkit/core.py",
                "from enum import Enum\n\n\nclass Accelerator(Enum):\n    CUDA = \"cuda\"\n",
            ),
            (
                "triton/deployer.py",
                "import torch\nimport triton\nimport triton.deployer_lib as deployer_lib\ndevice = torch.device(\"cuda\")\n",
            ),
            (
                "triton/scripts/serve.sh",
                "export CUDA_VISIBLE_DEVICES=0\ntritonserver --model-repository=/models\n",
            ),
            (
                "models/resnet/config.pbtxt",
                "name: \"resnet\"\nbackend: \"python\"\n",
            ),
            (
                "models/resnet/1/model.py",
                "import torch\n\n\nclass TritonPythonModel:\n    def initialize(self, args):\n        self.device = torch.device('cuda')\n",
            ),
        ],
    );
    let report = migrate::scan(root).unwrap();
    let changed: Vec<String> = report
        .changes
        .iter()
        .map(|c| c.path.display().to_string())
        .collect();
    // Only the training script: `import triton` there finds the deployment directory, not
    // OpenAI Triton, so it is no finding either.
    assert_eq!(changed, vec!["train.py"]);
    let server = |p: &str| (p.to_string(), 1, "triton-server");
    assert_eq!(
        found(&report),
        vec![
            server("models/resnet/1/model.py"),
            server("triton/client.py"),
            server("triton/deployer.py"),
            server("triton/deployment_toolkit/core.py"),
            server("triton/scripts/serve.sh"),
        ]
    );
    let why = |path: &str| {
        report
            .findings
            .iter()
            .find(|f| f.path == Path::new(path))
            .map(|f| f.message.clone())
            .unwrap_or_default()
    };
    assert!(
        why("models/resnet/1/model.py").contains("models/resnet/config.pbtxt"),
        "{}",
        why("models/resnet/1/model.py")
    );
    assert!(
        why("triton/deployment_toolkit/core.py")
            .contains("triton/client.py:2 imports `tritongrpcclient`"),
        "{}",
        why("triton/deployment_toolkit/core.py")
    );
}

/// A `triton/` directory of OpenAI Triton kernels (flash-attention's `ops/triton/` shape) is no
/// deployment: its kernels are reported and its device code ported.
#[test]
fn a_triton_directory_of_openai_kernels_is_not_a_deployment() {
    let tmp = tempfile::tempdir().unwrap();
    write_tree(
        tmp.path(),
        &[(
            "ops/triton/kernels.py",
            "import torch\nimport triton\n\n\n@triton.jit\ndef k(x):\n    pass\n\n\nx = torch.zeros(1).cuda()\n",
        )],
    );
    let report = migrate::scan(tmp.path()).unwrap();
    assert_eq!(report.changes.len(), 1);
    let kernels = "ops/triton/kernels.py".to_string();
    assert_eq!(
        found(&report),
        vec![(kernels.clone(), 2, "triton"), (kernels, 5, "triton")]
    );
}

// ---- DataParallel ------------------------------------------------------------------------

#[test]
fn data_parallel_is_reported_not_rewritten() {
    let src = "\
import torch
import torch.nn as nn
from torch.nn import DataParallel
from torch.nn.parallel import DistributedDataParallel as DDP


class DataParallel2(nn.Module):
    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            return nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        return self.main(input)


model.features = torch.nn.DataParallel(model.features)
model = torch.nn.DataParallel(model).cuda()
net = DataParallel(net, device_ids=[0, 1])
ddp = DDP(model, device_ids=[rank])
ddp2 = torch.nn.parallel.DistributedDataParallel(model)
if isinstance(model, nn.DataParallel):
    model = model.module
# nn.DataParallel(model) was slower
print(\"use nn.DataParallel(model) for one node\")
";
    let out = py(src);
    let dp: Vec<usize> = out
        .notes
        .iter()
        .filter(|n| n.rule == "data-parallel")
        .map(|n| n.line)
        .collect();
    assert_eq!(dp, vec![10, 14, 15, 16]);
    let msg = &out
        .notes
        .iter()
        .find(|n| n.rule == "data-parallel")
        .unwrap()
        .message;
    assert!(msg.contains("single-process multi-device"), "{msg}");
    assert!(
        msg.contains("DistributedDataParallel with tccl (torchrun"),
        "{msg}"
    );
    assert!(msg.contains("emulator"), "{msg}");
    // Kept as is: only the device moves change.
    assert!(out
        .text
        .contains("model = torch.nn.DataParallel(model).sdaa()\n"));
    assert!(out
        .text
        .contains("nn.parallel.data_parallel(self.main, input, range(self.ngpu))"));
}

// ---- torch.cuda.nccl ---------------------------------------------------------------------

#[test]
fn torch_cuda_nccl_is_kept_and_reported() {
    // pytorch/examples' FSDP environment check.
    let src = "import torch\nimport torch.cuda.nccl as nccl\nok = torch.cuda.is_bf16_supported() and nccl.version() >= (2, 10)\n";
    let out = py(src);
    assert!(
        out.text.contains("import torch.cuda.nccl as nccl\n"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("torch.sdaa.is_bf16_supported()"),
        "{}",
        out.text
    );
    assert_eq!(rules(&out), vec![(2, "torch-cuda-unsupported")]);
}

// ---- "cuda" as a directory name -------------------------------------------------------------

#[test]
fn a_cuda_directory_in_a_path_call_is_not_a_device() {
    // Deformable-DETR's models/ops/setup.py globs its kernels from src/cuda/: a path, kept;
    // a device string on the same line or the next is still rewritten.
    let src = "import glob, os\nimport torch\n\
               cu = glob.glob(os.path.join(src_dir, \"cuda\", \"*.cu\"))\n\
               more = glob.glob(f\"{src_dir}/x\") + sorted(Path(root, 'cuda').glob('*.cuh'))\n\
               d = torch.device(\"cuda\"); x = y.to('cuda', non_blocking=os.path.exists(p))\n";
    let out = py(src);
    assert!(
        out.text
            .contains("os.path.join(src_dir, \"cuda\", \"*.cu\")"),
        "{}",
        out.text
    );
    assert!(out.text.contains("Path(root, 'cuda')"), "{}", out.text);
    assert!(
        out.text
            .contains("d = torch.device(\"sdaa\"); x = y.to('sdaa', non_blocking"),
        "{}",
        out.text
    );
}
