//! The CUDA→SDAA rules, as one table, and the per-file transform that applies them.
//!
//! The transform is line-based and conservative: it rewrites only spellings whose SDAA
//! equivalent is mechanical (torch_sdaa mirrors `torch.cuda`, TCCL mirrors NCCL), and reports
//! with file:line what needs a person (CUDA kernels, CUDA extension builds, cupy, triton,
//! `torch.cuda` APIs torch_sdaa lacks, the forward-pass autocast apex did implicitly).
//! Running it on its own output changes nothing.

mod python;

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
        description: "add `import torch_sdaa` after the first `import torch` of a module that uses the device",
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
        description: "triton kernels (GPU-only compiler) need a port by hand",
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
        id: "apex-manual",
        action: Action::Report,
        description: "apex use the rules cannot convert mechanically (other amp calls, FusedAdam, ...) needs a person",
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
];

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
    cuda_method: Regex,
    is_cuda: Regex,
    torch_cuda: Regex,
    device_string: Regex,
    nccl: Regex,
    backend_nccl: Regex,
    visible: Regex,
    cudnn: Regex,
    backends_cuda: Regex,
    cpp_ext: Regex,
    cupy: Regex,
    triton: Regex,
    nvml: Regex,
    nvidia_smi: Regex,
    dali: Regex,
    nccl_env: Regex,
    torch_import: Regex,
    module_torch: Regex,
    sdaa_import: Regex,
    uses_device: Regex,
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
            prefilter: re(
                r"cuda|CUDA|nccl|NCCL|apex|cupy|triton|cudnn|cpp_extension|nvidia|nvml|\.cuh?\b",
            ),
            cuda_method: re(r"\.cuda\("),
            is_cuda: re(r"\.is_cuda\b"),
            torch_cuda: re(r"\btorch\.cuda\b(?:\.(\w+))?"),
            device_string: re(r#"(['"])cuda(:[^'"\n]*)?(['"])"#),
            nccl: re(r#"(['"])nccl(['"])"#),
            backend_nccl: re(r"\b(?:[A-Za-z_]\w*\.)*Backend\.NCCL\b"),
            visible: re(r"\bCUDA_VISIBLE_DEVICES\b"),
            cudnn: re(r"\b(?:torch\.backends\.)?cudnn\.(\w+)"),
            backends_cuda: re(r"\btorch\.backends\.cuda\b(?:\.(\w+(?:\.\w+)?))?"),
            cpp_ext: re(r"\bCUDAExtension\b|\bcpp_extension\b.*\.cu\b|\bload\(.*\.cu['\x22]"),
            cupy: re(r"^\s*(?:import|from)\s+cupy\b|\bcupy\.\w"),
            triton: re(r"^\s*(?:import|from)\s+triton\b|@triton\.(?:jit|autotune)"),
            nvml: re(r"^\s*(?:import|from)\s+(?:pynvml|py3nvml|nvidia_smi)\b|\bpynvml\.\w"),
            nvidia_smi: re(r"\bnvidia-smi\b"),
            dali: re(r"\bnvidia\.dali\b"),
            nccl_env: re(r"\bNCCL_[A-Z0-9_]+\b"),
            torch_import: re(r"^(\s*)(?:import\s+torch\b|from\s+torch(?:\.\w+)*\s+import\b)"),
            module_torch: re(r"^import\s+torch(?:\.\w+)*\s*(?:#.*)?$"),
            sdaa_import: re(r"(?m)^\s*import\s+torch_sdaa\b"),
            uses_device: re(r#"\.sdaa\(|\.is_sdaa\b|\btorch\.sdaa\b|['"]sdaa[:'"]|['"]tccl['"]"#),
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

/// Migrates one file's text.
pub fn migrate_text(text: &str, kind: FileKind) -> FileOutcome {
    match kind {
        FileKind::Python => migrate_python(text),
        FileKind::Shell => migrate_shell(text),
        FileKind::CudaSource => report_cuda_source(text),
    }
}

/// Shell launch scripts: the visible-devices variable and `--device cuda` arguments rewritten;
/// `NCCL_*` variables and `nvidia-smi` reported.
fn migrate_shell(text: &str) -> FileOutcome {
    let p = patterns();
    let mut out = FileOutcome::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with('#') {
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
    }
    let n = p.visible.find_iter(text).count();
    out.rewrote("visible-devices", n);
    let text = p.visible.replace_all(text, "SDAA_VISIBLE_DEVICES");
    let n = p.shell_device.find_iter(&text).count();
    out.rewrote("device-string", n);
    out.text = p.shell_device.replace_all(&text, "${1}sdaa").into_owned();
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
