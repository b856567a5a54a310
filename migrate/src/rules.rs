//! The CUDA→SDAA rules, as one table, and the per-file transform that applies them.
//!
//! The transform is line-based and conservative: it rewrites only spellings whose SDAA
//! equivalent is mechanical (torch_sdaa mirrors `torch.cuda`, TCCL mirrors NCCL), and reports
//! with file:line what needs a person (CUDA kernels, CUDA extension builds, cupy, triton,
//! `torch.cuda` APIs torch_sdaa lacks, the forward-pass autocast apex did implicitly).
//! Running it on its own output changes nothing.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::{Captures, Regex};
use serde::Serialize;

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
        id: "ddp-backend",
        action: Action::Rewrite,
        description: "DDP backend `'nccl'`/`\"nccl\"` (init_process_group, argparse defaults) → `'tccl'`",
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
    torch_cuda: Regex,
    device_string: Regex,
    nccl: Regex,
    visible: Regex,
    cudnn: Regex,
    cpp_ext: Regex,
    cupy: Regex,
    triton: Regex,
    torch_import: Regex,
    sdaa_import: Regex,
    uses_device: Regex,
    apex_ddp_import: Regex,
    apex_ddp_attr: Regex,
    apex_amp_import: Regex,
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
            prefilter: re(r"cuda|CUDA|nccl|apex|cupy|triton|cudnn|cpp_extension|\.cuh?\b"),
            cuda_method: re(r"\.cuda\("),
            torch_cuda: re(r"\btorch\.cuda\b(?:\.(\w+))?"),
            device_string: re(r#"(['"])cuda(:[^'"\n]*)?(['"])"#),
            nccl: re(r#"(['"])nccl(['"])"#),
            visible: re(r"\bCUDA_VISIBLE_DEVICES\b"),
            cudnn: re(r"\b(?:torch\.backends\.)?cudnn\.(\w+)"),
            cpp_ext: re(r"\bCUDAExtension\b|\bcpp_extension\b.*\.cu\b|\bload\(.*\.cu['\x22]"),
            cupy: re(r"^\s*(?:import|from)\s+cupy\b|\bcupy\.\w"),
            triton: re(r"^\s*(?:import|from)\s+triton\b|@triton\.(?:jit|autotune)"),
            torch_import: re(r"^(\s*)(?:import\s+torch\b|from\s+torch(?:\.\w+)*\s+import\b)"),
            sdaa_import: re(r"(?m)^\s*import\s+torch_sdaa\b"),
            uses_device: re(r#"\.sdaa\(|\btorch\.sdaa\b|['"]sdaa[:'"]|['"]tccl['"]"#),
            apex_ddp_import: re(
                r"^(\s*)from\s+apex\.parallel\s+import\s+DistributedDataParallel\b(.*?)\s*$",
            ),
            apex_ddp_attr: re(r"\bapex\.parallel\.DistributedDataParallel\b"),
            apex_amp_import: re(r"^\s*from\s+apex\s+import\s+amp\s*(?:#.*)?$"),
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

/// Shell launch scripts: the visible-devices variable and `--device cuda` arguments.
fn migrate_shell(text: &str) -> FileOutcome {
    let p = patterns();
    let mut out = FileOutcome::default();
    let n = p.visible.find_iter(text).count();
    out.rewrote("visible-devices", n);
    let text = p.visible.replace_all(text, "SDAA_VISIBLE_DEVICES");
    let n = p.shell_device.find_iter(&text).count();
    out.rewrote("device-string", n);
    out.text = p.shell_device.replace_all(&text, "${1}sdaa").into_owned();
    out
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

fn migrate_python(text: &str) -> FileOutcome {
    let p = patterns();
    let mut out = FileOutcome::default();
    if !p.prefilter.is_match(text) {
        out.text = text.to_string();
        return out;
    }
    // Lines with their original 1-based numbers; rewrites may replace one line by several.
    let mut lines: Vec<(usize, String)> = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect();
    let has_apex_amp = lines.iter().any(|(_, l)| p.apex_amp_import.is_match(l));
    if has_apex_amp {
        lines = migrate_apex_amp(lines, &mut out);
    }
    if text.contains("apex") {
        // apex DDP options sit on lines the prefilter does not look at.
        for (no, line) in &lines {
            for kw in APEX_DDP_ONLY_KWARGS {
                if strip_comment(line).contains(&format!("{kw}=")) {
                    out.note(
                        *no,
                        "apex-ddp",
                        format!("`{kw}=` is an apex DDP option torch's DistributedDataParallel does not take; remove it"),
                    );
                }
            }
        }
    }
    for (no, line) in lines.iter_mut() {
        if !p.prefilter.is_match(line) {
            continue;
        }
        let no = *no;
        migrate_line(line, no, &mut out);
    }
    let mut text: String = lines.into_iter().map(|(_, l)| l).collect();
    if p.uses_device.is_match(&text) && !p.sdaa_import.is_match(&text) {
        match insert_sdaa_import(&text) {
            Some(new) => {
                text = new;
                out.rewrote("import-torch-sdaa", 1);
            }
            None => out.note(
                1,
                "import-torch-sdaa",
                "uses the SDAA device but never imports torch; add `import torch_sdaa` by hand",
            ),
        }
    }
    out.text = text;
    out
}

/// Applies the single-line rules to one line (comments included: they describe the code).
fn migrate_line(line: &mut String, no: usize, out: &mut FileOutcome) {
    let p = patterns();
    let code = strip_comment(line);

    // Reports first: they look at the original spelling.
    for cap in p.cudnn.captures_iter(code) {
        out.note(
            no,
            "cudnn-flag",
            format!(
                "cudnn.{} kept: cuDNN flags have no effect on SDAA (TecoDNN)",
                &cap[1]
            ),
        );
    }
    if p.cpp_ext.is_match(code) {
        out.note(
            no,
            "cpp-extension-cuda",
            format!("CUDA extension build: {}", code.trim()),
        );
    }
    if p.cupy.is_match(code) {
        out.note(no, "cupy", format!("cupy: {}", code.trim()));
    }
    if p.triton.is_match(code) {
        out.note(no, "triton", format!("triton: {}", code.trim()));
    }

    // apex DDP.
    if let Some(cap) = p.apex_ddp_import.captures(line) {
        let new = format!(
            "{}from torch.nn.parallel import DistributedDataParallel{}\n",
            &cap[1],
            cap[2].trim_end_matches(['\r', '\n'])
        );
        *line = new;
        out.rewrote("apex-ddp", 1);
    }
    let n = p.apex_ddp_attr.find_iter(line).count();
    if n > 0 {
        *line = p
            .apex_ddp_attr
            .replace_all(line, "torch.nn.parallel.DistributedDataParallel")
            .into_owned();
        out.rewrote("apex-ddp", n);
    }
    if p.apex_any.is_match(strip_comment(line)) {
        out.note(
            no,
            "apex-manual",
            format!("apex use left as is: {}", strip_comment(line).trim()),
        );
    }

    // `.cuda(`
    let n = p.cuda_method.find_iter(line).count();
    if n > 0 {
        *line = p.cuda_method.replace_all(line, ".sdaa(").into_owned();
        out.rewrote("cuda-method", n);
    }

    // `torch.cuda[.attr]`
    if p.torch_cuda.is_match(line) {
        let mut rewrites = 0;
        let mut unsupported = Vec::new();
        let new = p.torch_cuda.replace_all(line, |c: &Captures| {
            let attr = c.get(1).map(|m| m.as_str());
            match attr {
                Some(a) if TORCH_CUDA_UNSUPPORTED.contains(&a) => {
                    unsupported.push(a.to_string());
                    c[0].to_string()
                }
                Some(a) => {
                    rewrites += 1;
                    format!("torch.sdaa.{a}")
                }
                None => {
                    rewrites += 1;
                    "torch.sdaa".to_string()
                }
            }
        });
        *line = new.into_owned();
        out.rewrote("torch-cuda", rewrites);
        for a in unsupported {
            out.note(
                no,
                "torch-cuda-unsupported",
                format!("torch.cuda.{a} has no SDAA equivalent; kept as is"),
            );
        }
    }

    // Device strings.
    let mut n = 0;
    let new = p.device_string.replace_all(line, |c: &Captures| {
        if c[1] == c[3] {
            n += 1;
            format!(
                "{}sdaa{}{}",
                &c[1],
                c.get(2).map_or("", |m| m.as_str()),
                &c[3]
            )
        } else {
            c[0].to_string()
        }
    });
    if n > 0 {
        *line = new.into_owned();
        out.rewrote("device-string", n);
    }

    // DDP backend.
    let mut n = 0;
    let new = p.nccl.replace_all(line, |c: &Captures| {
        if c[1] == c[2] {
            n += 1;
            format!("{}tccl{}", &c[1], &c[2])
        } else {
            c[0].to_string()
        }
    });
    if n > 0 {
        *line = new.into_owned();
        out.rewrote("ddp-backend", n);
    }

    let n = p.visible.find_iter(line).count();
    if n > 0 {
        *line = p
            .visible
            .replace_all(line, "SDAA_VISIBLE_DEVICES")
            .into_owned();
        out.rewrote("visible-devices", n);
    }
}

/// The canonical apex amp shapes → torch.sdaa.amp with a GradScaler (see the `apex-amp` rule).
fn migrate_apex_amp(lines: Vec<(usize, String)>, out: &mut FileOutcome) -> Vec<(usize, String)> {
    let p = patterns();
    let imports_torch = lines
        .iter()
        .any(|(_, l)| p.torch_import.is_match(l) && !l.contains("torch_sdaa"));
    let mut result: Vec<(usize, String)> = Vec::with_capacity(lines.len() + 2);
    // Optimizer names whose next `.step()` must go through the scaler.
    let mut pending_step: Vec<(String, String)> = Vec::new(); // (optimizer, indent)
    let mut i = 0;
    while i < lines.len() {
        let (no, line) = &lines[i];
        let no = *no;
        let eol = line_ending(line);
        if p.apex_amp_import.is_match(line) {
            // torch.sdaa.amp lives in torch: keep one `import torch`, never a duplicate.
            if !imports_torch {
                let indent = leading_ws(line);
                result.push((no, format!("{indent}import torch{eol}")));
            }
            out.rewrote("apex-amp", 1);
            i += 1;
            continue;
        }
        if let Some(cap) = p.amp_initialize.captures(line) {
            let indent = cap[1].to_string();
            result.push((
                no,
                format!("{indent}scaler = torch.sdaa.amp.GradScaler(){eol}"),
            ));
            out.rewrote("apex-amp", 1);
            out.note(
                no,
                "apex-amp",
                "apex amp.initialize autocast the forward pass implicitly; wrap the forward pass and loss in `with torch.sdaa.amp.autocast():`",
            );
            i += 1;
            continue;
        }
        if let Some(cap) = p.amp_scale_loss.captures(line) {
            let indent = cap[1].to_string();
            let (loss, opt, scaled) = (cap[2].to_string(), cap[3].to_string(), cap[4].to_string());
            // The block must be exactly `scaled.backward()` (optionally with arguments).
            let body = lines.get(i + 1).map(|(_, l)| l.trim()).unwrap_or("");
            let body_ok = body.starts_with(&format!("{scaled}.backward("))
                && leading_ws(&lines[i + 1].1).len() > indent.len();
            let block_ends = lines
                .get(i + 2)
                .map(|(_, l)| l.trim().is_empty() || leading_ws(l).len() <= indent.len())
                .unwrap_or(true);
            if body_ok && block_ends {
                let args = body[scaled.len() + ".backward".len()..].to_string();
                result.push((
                    no,
                    format!("{indent}scaler.scale({loss}).backward{args}{eol}"),
                ));
                out.rewrote("apex-amp", 1);
                pending_step.push((opt, indent));
                i += 2;
                continue;
            }
            out.note(
                no,
                "apex-manual",
                "amp.scale_loss block is not a single `.backward()`; convert it to scaler.scale(loss) by hand",
            );
        }
        // `opt.step()` after a converted scale_loss.
        let trimmed = line.trim();
        if let Some(pos) = pending_step
            .iter()
            .position(|(opt, _)| trimmed == format!("{opt}.step()"))
        {
            let (opt, _) = pending_step.remove(pos);
            let indent = leading_ws(line);
            result.push((no, format!("{indent}scaler.step({opt}){eol}")));
            result.push((no, format!("{indent}scaler.update(){eol}")));
            out.rewrote("apex-amp", 1);
            i += 1;
            continue;
        }
        if line.contains("amp.") && !line.contains("torch.") && !line.contains("sdaa.amp") {
            out.note(
                no,
                "apex-manual",
                format!("apex amp call left as is: {}", strip_comment(line).trim()),
            );
        }
        result.push((no, line.clone()));
        i += 1;
    }
    for (opt, _) in pending_step {
        out.note(
            1,
            "apex-manual",
            format!("no `{opt}.step()` found after amp.scale_loss; call scaler.step({opt}) and scaler.update() by hand"),
        );
    }
    result
}

/// Inserts `import torch_sdaa` after the first torch import statement (after its closing
/// parenthesis or last continuation line), at that statement's indentation.
fn insert_sdaa_import(text: &str) -> Option<String> {
    let p = patterns();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines.iter().position(|l| p.torch_import.is_match(l))?;
    let indent = leading_ws(lines[start]).to_string();
    let mut end = start;
    let mut depth: i32 = 0;
    loop {
        let code = strip_comment(lines[end]);
        depth += code.matches('(').count() as i32 - code.matches(')').count() as i32;
        let continued = code.trim_end().ends_with('\\');
        if (depth <= 0 && !continued) || end + 1 >= lines.len() {
            break;
        }
        end += 1;
    }
    let eol = line_ending(lines[end]);
    let mut out = String::with_capacity(text.len() + 24);
    for l in &lines[..=end] {
        out.push_str(l);
    }
    if eol.is_empty() {
        out.push('\n');
    }
    out.push_str(&indent);
    out.push_str("import torch_sdaa");
    out.push_str(if eol.is_empty() { "\n" } else { eol });
    for l in &lines[end + 1..] {
        out.push_str(l);
    }
    Some(out)
}

fn leading_ws(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

fn line_ending(line: &str) -> &'static str {
    if line.ends_with("\r\n") {
        "\r\n"
    } else if line.ends_with('\n') {
        "\n"
    } else {
        ""
    }
}

/// The line without a trailing `#` comment (a `#` inside a string literal is respected).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (_, '\\') => escaped = true,
            (None, '#') => return &line[..i],
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    line
}
