//! The CUDA→SDAA rules, as one table, and the per-file transform that applies them.
//!
//! The transform is line-based and conservative: it rewrites only spellings whose SDAA
//! equivalent is mechanical (torch_sdaa mirrors `torch.cuda`, TCCL mirrors NCCL), and reports
//! with file:line what needs a person (CUDA kernels, CUDA extension builds, cupy, triton,
//! `torch.cuda` APIs torch_sdaa lacks, apex's compiled kernels, the forward-pass autocast apex
//! did implicitly). Code rules look at code only; prose (comments, docstrings, the text of
//! string literals) is neither rewritten nor reported, except string literals whose whole value
//! is data a rule knows: a device (`"cuda:0"`), a backend (`"nccl"`), an environment variable
//! (`"CUDA_VISIBLE_DEVICES"`, `"NCCL_DEBUG"`), a command (`"nvidia-smi -L"`), a `.cu` source.
//! Running it on its own output changes nothing.

mod python;

pub(crate) use python::triton_server_import;
pub use python::SDAA_IMPORT;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

use python::migrate_python;

/// Whether a rule rewrites code or only reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Rewrites the code; counted in the summary.
    Rewrite,
    /// Keeps the code and lists it in the report (works, or needs a person).
    Report,
}

/// One migration rule: a stable id (in diffs' summary, reports and `--list-rules`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rule {
    pub id: &'static str,
    pub action: Action,
    pub description: &'static str,
}

/// Every rule, in the order they are applied.
pub const RULES: &[Rule] = &[
    Rule {
        id: "import-torch-sdaa",
        action: Action::Rewrite,
        description: "add `import torch_sdaa  # noqa: F401` after the first statement importing torch (`import torch`, `import os, torch`, `from torch import nn`) of a module that uses the device (incl. `torch.accelerator`, which reports sdaa once torch_sdaa is imported)",
    },
    Rule {
        id: "cuda-method",
        action: Action::Rewrite,
        description: "`.cuda(` → `.sdaa(` (tensors and modules)",
    },
    Rule {
        id: "torch-cuda",
        action: Action::Rewrite,
        description: "`torch.cuda` → `torch.sdaa` (incl. `torch.cuda.amp`, `from torch.cuda.amp import ...`)",
    },
    Rule {
        id: "device-string",
        action: Action::Rewrite,
        description: "device strings `'cuda'`, `\"cuda:0\"`, `f\"cuda:{i}\"` → `sdaa`",
    },
    Rule {
        id: "is-cuda",
        action: Action::Rewrite,
        description: "`x.is_cuda` → `x.is_sdaa`",
    },
    Rule {
        id: "ddp-backend",
        action: Action::Rewrite,
        description: "DDP backend `'nccl'`/`\"nccl\"` (init_process_group, argparse defaults) and `dist.Backend.NCCL` → `'tccl'`",
    },
    Rule {
        id: "visible-devices",
        action: Action::Rewrite,
        description: "`CUDA_VISIBLE_DEVICES` → `SDAA_VISIBLE_DEVICES` (Python and shell scripts)",
    },
    Rule {
        id: "apex-ddp",
        action: Action::Rewrite,
        description: "apex `DistributedDataParallel` → `torch.nn.parallel.DistributedDataParallel`; apex-only keyword arguments are reported",
    },
    Rule {
        id: "apex-amp",
        action: Action::Rewrite,
        description: "apex amp → torch.sdaa.amp: `amp.initialize` → a `GradScaler`, `with amp.scale_loss(l, opt) as s: s.backward()` → `scaler.scale(l).backward()`, the following `opt.step()` → `scaler.step(opt); scaler.update()`; the forward-pass autocast is reported",
    },
    Rule {
        id: "cudnn-flag",
        action: Action::Report,
        description: "`torch.backends.cudnn.*` flags are kept (harmless on SDAA) but reported",
    },
    Rule {
        id: "torch-cuda-unsupported",
        action: Action::Report,
        description: "`torch.cuda` APIs with no SDAA equivalent (nvtx, CUDA graphs, jiterator, arch lists, cudart) are kept and reported",
    },
    Rule {
        id: "cuda-source",
        action: Action::Report,
        description: "`.cu`/`.cuh` CUDA sources (each `__global__` kernel) need a port to SDAA by hand",
    },
    Rule {
        id: "cpp-extension-cuda",
        action: Action::Report,
        description: "`torch.utils.cpp_extension` CUDA builds (`CUDAExtension`, `.cu` sources, `BuildExtension`) need a port by hand",
    },
    Rule {
        id: "cupy",
        action: Action::Report,
        description: "cupy use (CUDA-only arrays and kernels) needs a port by hand",
    },
    Rule {
        id: "triton",
        action: Action::Report,
        description: "OpenAI Triton kernels (`import triton`, `triton.language`, `@triton.jit`; a GPU-only compiler) need a port by hand; Triton Inference Server code is `triton-server`",
    },
    Rule {
        id: "triton-server",
        action: Action::Report,
        description: "Triton Inference Server code (`tritonclient`, `tritonserver`, `triton_python_backend_utils`/`pb_utils`, a model repository's `config.pbtxt`, a `triton/` deployment directory) is NVIDIA's serving stack, not OpenAI Triton: the file is left as is and reported once",
    },
    Rule {
        id: "cuda-only-guard",
        action: Action::Report,
        description: "a `torch.cuda.is_available()` / `device_count()` guard of a CUDA-only library (apex, amp_C, cupy, triton, DALI, NVML, cuDNN settings) stays CUDA: the statement and the block it guards are kept, so on SDAA the CUDA-only path is skipped (an assert fails)",
    },
    Rule {
        id: "data-parallel",
        action: Action::Report,
        description: "`nn.DataParallel` / `data_parallel` (single-process multi-device) is kept and reported: on SDAA use DistributedDataParallel with tccl (torchrun)",
    },
    Rule {
        id: "torch-backends-cuda",
        action: Action::Report,
        description: "`torch.backends.cuda.*` settings (`matmul.allow_tf32`, `sdp_kernel`, ...) are CUDA-only; kept and reported",
    },
    Rule {
        id: "nvidia-only",
        action: Action::Report,
        description: "pynvml/NVML, `nvidia-smi` and NVIDIA DALI have no SDAA equivalent; kept and reported",
    },
    Rule {
        id: "nccl-env",
        action: Action::Report,
        description: "`NCCL_*` environment variables (Python and shell scripts) are not read by TCCL; kept and reported",
    },
    Rule {
        id: "torch-accelerator",
        action: Action::Report,
        description: "`torch.accelerator` memory statistics and `get_device_capability` fail on torch_sdaa (its allocator is not a c10 DeviceAllocator); use the `torch.sdaa` call",
    },
    Rule {
        id: "apex-kernels",
        action: Action::Report,
        description: "apex's compiled CUDA kernels (`amp_C`, `apex_C`, `apex.multi_tensor_apply`, `apex.optimizers`, `apex.normalization`, `*_cuda` extension modules) have no SDAA build; each import is reported with the torch replacement",
    },
    Rule {
        id: "apex-manual",
        action: Action::Report,
        description: "apex use the rules cannot convert mechanically (other amp calls, `apex.parallel.SyncBatchNorm`, ...) needs a person",
    },
];

/// A place in a file that the rules rewrote or reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    /// 1-based line in the original file.
    pub line: usize,
    pub rule: &'static str,
    pub message: String,
}

/// The outcome of migrating one file's text.
#[derive(Debug, Clone, Default)]
pub struct FileOutcome {
    /// The migrated text (equal to the input when nothing applied).
    pub text: String,
    /// Rewrites per rule id.
    pub rewrites: BTreeMap<&'static str, usize>,
    /// Report-only findings (kept code, manual work).
    pub notes: Vec<Note>,
    /// For each line of `text`, the 1-based input line it stands for (0: a line the rules
    /// added); empty when line i of `text` stands for input line i. The diff is built from it
    /// (no search, so linear in the file).
    pub origin: Vec<usize>,
}

impl FileOutcome {
    fn rewrote(&mut self, rule: &'static str, n: usize) {
        if n > 0 {
            *self.rewrites.entry(rule).or_default() += n;
        }
    }
    fn note(&mut self, line: usize, rule: &'static str, message: impl Into<String>) {
        self.notes.push(Note {
            line,
            rule,
            message: message.into(),
        });
    }
}

/// `torch.cuda` attributes torch_sdaa does not provide.
const TORCH_CUDA_UNSUPPORTED: &[&str] = &[
    "nvtx",
    "graphs",
    "graph",
    "CUDAGraph",
    "make_graphed_callables",
    "graph_pool_handle",
    "jiterator",
    "get_arch_list",
    "get_gencode_flags",
    "cudart",
    "_sleep",
    "comm",
    "tunable",
    // NCCL's own bindings (`import torch.cuda.nccl as nccl`; `nccl.version()`): TCCL is reached
    // through torch.distributed, not a torch.sdaa module.
    "nccl",
];

/// `torch.accelerator` calls that fail on sdaa, and the `torch.sdaa` call to use instead (`None`:
/// no equivalent). Checked with torch 2.11 on the SDAA emulator: the memory calls raise
/// "Allocator for sdaa is not a DeviceAllocator", `get_device_capability` "Backend doesn't
/// support getting device capabilities"; everything else (`current_accelerator`,
/// `is_available`, `device_count`, `synchronize`, streams, `device_index`) works.
const ACCELERATOR_UNSUPPORTED: &[(&str, Option<&str>)] = &[
    ("memory_allocated", Some("torch.sdaa.memory_allocated()")),
    (
        "max_memory_allocated",
        Some("torch.sdaa.max_memory_allocated()"),
    ),
    ("memory_reserved", Some("torch.sdaa.memory_reserved()")),
    (
        "max_memory_reserved",
        Some("torch.sdaa.max_memory_reserved()"),
    ),
    ("memory_stats", Some("torch.sdaa.memory_stats()")),
    ("empty_cache", Some("torch.sdaa.empty_cache()")),
    (
        "reset_peak_memory_stats",
        Some("torch.sdaa.reset_peak_memory_stats()"),
    ),
    (
        "reset_accumulated_memory_stats",
        Some("torch.sdaa.reset_accumulated_memory_stats()"),
    ),
    ("get_memory_info", Some("torch.sdaa.mem_get_info()")),
    ("get_device_capability", None),
];

/// The `data-parallel` finding. DataParallel drives every device from one process
/// (replicating the module per step); torch_sdaa's multi-device path is DDP over TCCL.
const DATA_PARALLEL: &str = "DataParallel is single-process multi-device; on SDAA use DistributedDataParallel with tccl (torchrun, one process per device); kept as is — the SDAA emulator runs it over every visible emulated device (SDAA_EMULATOR_DEVICES, default 2), one replica thread each, and SDAA_VISIBLE_DEVICES=0 makes it one device (docs/torch_sdaa.md)";

const FOREACH: &str = "torch's foreach ops (`torch._foreach_*`, `torch.nn.utils.clip_grad_norm_(..., foreach=True)`) and optimizers (`torch.optim.AdamW(..., foreach=True)`), and `torch.sdaa.amp.GradScaler` for loss scaling";
const TORCH_OPTIM: &str =
    "torch.optim's Adam / AdamW / SGD (`foreach=True`); LAMB and NovoGrad have no torch equivalent";
const TORCH_NORM: &str = "`torch.nn.LayerNorm` / `torch.nn.RMSNorm`";
const TORCH_SYNCBN: &str = "`torch.nn.SyncBatchNorm` (`convert_sync_batchnorm`)";
const TORCH_SOFTMAX: &str =
    "`torch.softmax` on the masked scores (or `torch.nn.functional.scaled_dot_product_attention`)";

/// apex's compiled CUDA kernels (and the apex modules built on them), each a module path or a
/// prefix of one (`apex.optimizers` covers `apex.optimizers.FusedAdam`), with what to use
/// instead: none of them has an SDAA build.
const APEX_KERNELS: &[(&str, &str)] = &[
    ("amp_C", FOREACH),
    ("apex.amp_C", FOREACH),
    ("apex.multi_tensor_apply", FOREACH),
    (
        "apex_C",
        "`torch._utils._flatten_dense_tensors` / `_unflatten_dense_tensors`",
    ),
    ("apex.optimizers", TORCH_OPTIM),
    ("fused_adam_cuda", TORCH_OPTIM),
    ("fused_lamb_cuda", TORCH_OPTIM),
    ("distributed_adam_cuda", TORCH_OPTIM),
    ("distributed_lamb_cuda", TORCH_OPTIM),
    ("apex.normalization", TORCH_NORM),
    ("fused_layer_norm_cuda", TORCH_NORM),
    ("fast_layer_norm", TORCH_NORM),
    ("syncbn", TORCH_SYNCBN),
    ("bnp", TORCH_SYNCBN),
    ("apex.fused_dense", "`torch.nn.Linear` (and the activation)"),
    ("fused_dense_cuda", "`torch.nn.Linear` (and the activation)"),
    ("apex.mlp", "`torch.nn.Linear` layers"),
    ("mlp_cuda", "`torch.nn.Linear` layers"),
    (
        "xentropy_cuda",
        "`torch.nn.CrossEntropyLoss(label_smoothing=...)`",
    ),
    ("scaled_masked_softmax_cuda", TORCH_SOFTMAX),
    ("scaled_upper_triang_masked_softmax_cuda", TORCH_SOFTMAX),
    ("scaled_softmax_cuda", TORCH_SOFTMAX),
    ("generic_scaled_masked_softmax_cuda", TORCH_SOFTMAX),
    (
        "fmhalib",
        "`torch.nn.functional.scaled_dot_product_attention`",
    ),
    ("fast_multihead_attn", "`torch.nn.MultiheadAttention`"),
    ("apex.contrib", "a torch op, or a port of the kernel"),
];

/// What to use instead of the apex kernel module `module` (a dotted path), if it is one. In a
/// file that uses apex, any `*_cuda` / `fused_*` module counts too: apex and Megatron name
/// their compiled extensions that way.
fn apex_kernel(module: &str, apex_file: bool) -> Option<&'static str> {
    let known = APEX_KERNELS.iter().find(|(name, _)| {
        module == *name
            || module
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('.'))
    });
    if let Some((_, instead)) = known {
        return Some(instead);
    }
    let top = module.split('.').next().unwrap_or(module);
    (apex_file && (top.ends_with("_cuda") || top.starts_with("fused_")))
        .then_some("a torch op, or a port of the kernel")
}

/// apex DistributedDataParallel keyword arguments torch's DDP does not take.
const APEX_DDP_ONLY_KWARGS: &[&str] = &[
    "delay_allreduce",
    "message_size",
    "allreduce_trigger_params",
    "retain_allreduce_buffers",
    "allreduce_always_fp32",
    "num_allreduce_streams",
    "allreduce_communicators",
    "gradient_average",
    "gradient_predivide_factor",
    "shared_param",
];

struct Patterns {
    prefilter: Regex,
    shell_prefilter: Regex,
    cuda_method: Regex,
    is_cuda: Regex,
    torch_cuda: Regex,
    backend_nccl: Regex,
    visible: Regex,
    cudnn: Regex,
    backends_cuda: Regex,
    cpp_ext: Regex,
    cupy: Regex,
    triton_decorator: Regex,
    data_parallel: Regex,
    guard_call: Regex,
    cuda_only_lib: Regex,
    device_work: Regex,
    cuda_setting: Regex,
    pb_utils: Regex,
    nvml: Regex,
    nvidia_smi: Regex,
    dali: Regex,
    nccl_env: Regex,
    nccl_env_value: Regex,
    visible_value: Regex,
    nvidia_smi_value: Regex,
    cu_source_value: Regex,
    cpp_ext_build: Regex,
    device_value: Regex,
    accelerator_unsupported: Regex,
    apex_kernel_attr: Regex,
    apex_ddp_kwarg: Regex,
    sdaa_import: Regex,
    uses_device: Regex,
    uses_device_value: Regex,
    apex_ddp_import: Regex,
    apex_ddp_attr: Regex,
    apex_amp_import: Regex,
    apex_amp_any: Regex,
    amp_initialize: Regex,
    amp_scale_loss: Regex,
    apex_any: Regex,
    shell_device: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |s: &str| Regex::new(s).expect("built-in migration pattern");
        Patterns {
            // A superset of what any Python rule looks at: lines without it are passed over.
            prefilter: re(
                r"cuda|CUDA|nccl|NCCL|apex|amp_C|cupy|triton|cudnn|cpp_extension|nvidia|nvml|accelerator|DataParallel|data_parallel|\.cuh?\b",
            ),
            shell_prefilter: re(r"CUDA_VISIBLE_DEVICES|--device|NCCL_|nvidia-smi"),
            cuda_method: re(r"\.cuda\("),
            is_cuda: re(r"\.is_cuda\b"),
            torch_cuda: re(r"\btorch\.cuda\b(?:\.(\w+))?"),
            backend_nccl: re(r"\b(?:[A-Za-z_]\w*\.)*Backend\.NCCL\b"),
            visible: re(r"\bCUDA_VISIBLE_DEVICES\b"),
            cudnn: re(r"\b(?:torch\.backends\.)?cudnn\.(\w+)"),
            backends_cuda: re(r"\btorch\.backends\.cuda\b(?:\.(\w+(?:\.\w+)?))?"),
            cpp_ext: re(r"\bCUDAExtension\b"),
            // Code that builds sources: a `.cu` string on its line is compiled for CUDA.
            cpp_ext_build: re(r"\bcpp_extension\b|\bload(?:_inline)?\s*\(|\bsources\s*="),
            cupy: re(r"^\s*(?:import|from)\s+cupy\b|\bcupy\.\w"),
            triton_decorator: re(r"@\s*triton\.(?:jit|autotune|heuristics)\b"),
            data_parallel: re(r"\bDataParallel\s*\(|\bdata_parallel\s*\("),
            guard_call: re(r"\btorch\.cuda\.(is_available|device_count)\b"),
            // A CUDA-only library named in a guard (its condition, message or block): a word
            // of its own, `_` counting as a separator (`has_apex`, `HAS_CUPY`, `amp_C`).
            cuda_only_lib: re(
                r"(?i)(?:^|[^a-z0-9])(apex|amp_c|apex_c|cupy|triton|dali|pynvml|nvml|cudnn)(?:$|[^a-z0-9])",
            ),
            // What moves work to the device: a guard doing this is device selection, never kept.
            device_work: re(
                r"\.cuda\(|\.to\(|\btorch\.device\(|\bset_device\b|['\x22]cuda(?::[^'\x22\n]*)?['\x22]",
            ),
            pb_utils: re(r"\bpb_utils\.\w"),
            cuda_setting: re(
                r"^\s*(?:(?:torch\.backends\.)?cudnn\.\w+|torch\.backends\.cuda(?:\.\w+)+)\s*=[^=]|^\s*pass\s*$",
            ),
            nvml: re(r"^\s*(?:import|from)\s+(?:pynvml|py3nvml|nvidia_smi)\b|\bpynvml\.\w"),
            nvidia_smi: re(r"\bnvidia-smi\b"),
            dali: re(r"\bnvidia\.dali\b"),
            nccl_env: re(r"\bNCCL_[A-Z0-9_]+\b"),
            // In a string: the variable's name as a whole value (`os.environ["NCCL_DEBUG"]`) or
            // assigned in a command (`"NCCL_DEBUG=INFO torchrun ..."`); mentioned in prose, not.
            nccl_env_value: re(r"^NCCL_[A-Z0-9_]+$|\bNCCL_[A-Z0-9_]+="),
            visible_value: re(r"^CUDA_VISIBLE_DEVICES$|\bCUDA_VISIBLE_DEVICES="),
            // A command: the string starts with it (or a path to it), or runs it after `&&`,
            // `||` or in `$(…)`; named in a sentence, it is prose.
            nvidia_smi_value: re(r"(?:^|&&|\|\||\$\()\s*(?:[\w./-]*/)?nvidia-smi\b"),
            cu_source_value: re(r"\.cuh?$"),
            device_value: re(r"^cuda(?::[^'\x22\n]*)?$"),
            accelerator_unsupported: re(
                r"\btorch\.accelerator\.(memory_allocated|max_memory_allocated|memory_reserved|max_memory_reserved|memory_stats|empty_cache|reset_peak_memory_stats|reset_accumulated_memory_stats|get_memory_info|get_device_capability)\b",
            ),
            apex_ddp_kwarg: re(&format!(
                r"\b({})\s*=(?:[^=]|$)",
                APEX_DDP_ONLY_KWARGS.join("|")
            )),
            apex_kernel_attr: re(
                r"\bapex\.(?:multi_tensor_apply|optimizers|normalization|contrib|fused_dense|mlp)\b",
            ),
            sdaa_import: re(r"(?m)^[ \t]*(?:import[ \t]+torch_sdaa\b|from[ \t]+torch_sdaa[ \t.])"),
            // In code. `torch.accelerator` picks the device torch_sdaa registers, so a module
            // using it needs the import even when nothing was rewritten.
            uses_device: re(
                r"(?m)\.sdaa\(|\.is_sdaa\b|\btorch\.(?:sdaa|accelerator)\b|^[ \t]*from[ \t]+torch[ \t]+import\b[^\n]*\baccelerator\b",
            ),
            uses_device_value: re(r"^(?:sdaa(?::[^'\x22\n]*)?|tccl)$"),
            apex_ddp_import: re(
                r"^(\s*)from\s+apex\.parallel\s+import\s+DistributedDataParallel((?:\s+as\s+\w+)?)(\s*(?:#.*)?)$",
            ),
            apex_ddp_attr: re(r"\bapex\.parallel\.DistributedDataParallel\b"),
            apex_amp_import: re(r"^from\s+apex\s+import\s+amp\s*(?:#.*)?$"),
            apex_amp_any: re(
                r"^\s*(?:from\s+apex\s+import\b.*\bamp\b|import\s+apex\.amp\b|from\s+apex\.amp\b)",
            ),
            amp_initialize: re(
                r"^(\s*)[\w\s,\[\]()]+=\s*amp\.initialize\(\s*\w+\s*,\s*\w+\s*(?:,.*)?\)\s*(?:#.*)?$",
            ),
            amp_scale_loss: re(
                r"^(\s*)with\s+amp\.scale_loss\(\s*([^,()]+?)\s*,\s*(\w+)\s*\)\s+as\s+(\w+)\s*:\s*(?:#.*)?$",
            ),
            apex_any: re(r"\bapex\b"),
            shell_device: re(r"(--device[= ]+['\x22]?)cuda\b"),
        }
    })
}

/// Kind of file, by name; decides which rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Python,
    Shell,
    CudaSource,
}

impl FileKind {
    /// The kind of a file name, or `None` for files the migration does not read.
    pub fn of(name: &str) -> Option<FileKind> {
        let ext = name.rsplit_once('.').map(|(_, e)| e)?;
        match ext {
            "py" | "pyw" => Some(FileKind::Python),
            "sh" | "bash" => Some(FileKind::Shell),
            "cu" | "cuh" => Some(FileKind::CudaSource),
            _ => None,
        }
    }
}

/// What the migration knows about a file from the tree around it (filled in by
/// [`crate::scan`]); the default is a file on its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// Why the file is Triton Inference Server code by where it lies — in a model repository
    /// (a `config.pbtxt` above it) or a `triton/` deployment directory — or `None`.
    pub triton_server: Option<String>,
    /// A project-local `triton` directory (at the root, or beside the file) is what
    /// `import triton` finds there, so those imports are not OpenAI Triton.
    pub local_triton: bool,
}

/// Migrates one file's text, on its own (see [`migrate_text_in`]).
pub fn migrate_text(text: &str, kind: FileKind) -> FileOutcome {
    migrate_text_in(text, kind, &Context::default())
}

/// Migrates one file's text, knowing what the tree around it says ([`Context`]). Triton
/// Inference Server code — by its imports, or by where it lies — is left exactly as it is and
/// reported once: it deploys on NVIDIA's server, which has no SDAA backend, and its `"cuda"`
/// values are that server's settings, not a training device.
pub fn migrate_text_in(text: &str, kind: FileKind, ctx: &Context) -> FileOutcome {
    let server = match (&ctx.triton_server, kind) {
        (Some(why), _) => Some((1, why.clone())),
        (None, FileKind::Python) => python::triton_server_import(text),
        (None, _) => None,
    };
    if let Some((line, why)) = server {
        let mut out = FileOutcome {
            text: text.to_string(),
            ..FileOutcome::default()
        };
        out.note(
            line,
            "triton-server",
            format!(
                "Triton Inference Server code ({why}): NVIDIA's model server, not OpenAI Triton, \
                 and it has no SDAA backend; left as is (its \"cuda\" values configure that server) \
                 — serve the ported model another way, or keep this deployment on CUDA"
            ),
        );
        return out;
    }
    match kind {
        FileKind::Python => migrate_python(text, ctx),
        FileKind::Shell => migrate_shell(text),
        FileKind::CudaSource => report_cuda_source(text),
    }
}

/// Shell launch scripts: the visible-devices variable and `--device cuda` arguments rewritten;
/// `NCCL_*` variables and `nvidia-smi` reported. Comment lines are prose: neither.
fn migrate_shell(text: &str) -> FileOutcome {
    let p = patterns();
    let mut out = FileOutcome::default();
    let mut new = String::with_capacity(text.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if line.trim_start().starts_with('#') || !p.shell_prefilter.is_match(line) {
            new.push_str(line);
            continue;
        }
        report_nccl_env(line, i + 1, &mut out);
        if p.nvidia_smi.is_match(line) {
            out.note(
                i + 1,
                "nvidia-only",
                "nvidia-smi queries NVIDIA GPUs and has no SDAA equivalent here; port by hand",
            );
        }
        let n = p.visible.find_iter(line).count();
        out.rewrote("visible-devices", n);
        let line = p.visible.replace_all(line, "SDAA_VISIBLE_DEVICES");
        let n = p.shell_device.find_iter(&line).count();
        out.rewrote("device-string", n);
        new.push_str(&p.shell_device.replace_all(&line, "${1}sdaa"));
    }
    out.text = new;
    out
}

fn report_nccl_env(code: &str, no: usize, out: &mut FileOutcome) {
    let mut seen: Vec<&str> = Vec::new();
    for m in patterns().nccl_env.find_iter(code) {
        if seen.contains(&m.as_str()) {
            continue;
        }
        seen.push(m.as_str());
        out.note(
            no,
            "nccl-env",
            format!(
                "{} is an NCCL setting; TCCL does not read NCCL_* variables: find the TCCL equivalent or drop it",
                m.as_str()
            ),
        );
    }
}

fn report_cuda_source(text: &str) -> FileOutcome {
    let mut out = FileOutcome {
        text: text.to_string(),
        ..FileOutcome::default()
    };
    for (i, line) in text.lines().enumerate() {
        if line.contains("__global__") {
            out.note(
                i + 1,
                "cuda-source",
                format!("CUDA kernel: {}", line.trim()),
            );
        }
    }
    if out.notes.is_empty() {
        out.note(1, "cuda-source", "CUDA source file");
    }
    out
}
