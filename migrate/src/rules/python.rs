//! The Python file transform: each line's rewrites, apex amp → torch.sdaa.amp (all or nothing
//! per file), and the `torch_sdaa` import the rewritten file needs.
//!
//! Code rules run over the lexer's code view (strings and comments blanked), so prose — a help
//! text, a docstring, a comment, an error message naming apex — is neither rewritten nor
//! reported. String literals are looked at by value, and only for data a rule knows (a device,
//! a backend, an environment variable, a command, a `.cu` source); docstrings never.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;

use regex::{Captures, Regex};

use super::{
    apex_kernel, patterns, Context, FileOutcome, Note, ACCELERATOR_UNSUPPORTED, DATA_PARALLEL,
    TORCH_CUDA_UNSUPPORTED,
};
use crate::pysrc;

fn join(lines: &[(usize, String)]) -> String {
    lines.iter().map(|(_, l)| l.as_str()).collect()
}

pub(super) fn migrate_python(text: &str, ctx: &Context) -> FileOutcome {
    let p = patterns();
    let mut out = FileOutcome::default();
    if !p.prefilter.is_match(text) {
        out.text = text.to_string();
        return out;
    }
    // Lines with their original 1-based numbers; rewrites may replace one line by several
    // (each entry stays one physical line, so a re-lex lines up with the entries).
    let mut lines: Vec<(usize, String)> = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect();
    if text.contains("apex") {
        let lexed = pysrc::lex(text);
        let has_apex_amp = lines
            .iter()
            .any(|(no, l)| lexed.statement(*no) && p.apex_amp_any.is_match(l));
        if has_apex_amp {
            lines = migrate_apex_amp(lines, &lexed, &mut out);
        }
    }
    let joined = join(&lines);
    let after = pysrc::lex_without_names(&joined);
    let module_torch = lines.iter().enumerate().any(|(i, (_, l))| {
        after.statement(i + 1) && l.starts_with("import") && binds_torch(&statement_code(&after, i))
    });
    let file = FileFacts {
        module_torch,
        apex: p.apex_any.is_match(&after.code),
        local_triton: ctx.local_triton,
    };
    // Lines that stay CUDA: guards of CUDA-only libraries and the blocks under them.
    let kept = cuda_only_guards(&lines, &after, &mut out);
    let mut hits = string_hits(&joined, &after).into_iter().peekable();
    drop(joined);
    for (i, (no, line)) in lines.iter_mut().enumerate() {
        let mut mine = Vec::new();
        while let Some((_, hit)) = hits.next_if(|(l, _)| *l == i) {
            mine.push(hit);
        }
        let code = after.code_line(i);
        if mine.is_empty() && !p.prefilter.is_match(code) && !(file.apex && code.contains('=')) {
            continue;
        }
        let mut code = code.to_string();
        let info = after.lines.get(i).copied().unwrap_or_default();
        if kept.get(i).copied().unwrap_or(false) {
            // Its findings still count; its rewrites do not happen.
            let mut scratch = FileOutcome::default();
            let mut copy = line.clone();
            migrate_line(&mut copy, &mut code, *no, info, file, mine, &mut scratch);
            out.notes.append(&mut scratch.notes);
            continue;
        }
        migrate_line(line, &mut code, *no, info, file, mine, &mut out);
    }
    drop(after);

    let text = join(&lines);
    let fin = pysrc::lex_without_names(&text);
    let uses_device = p.uses_device.is_match(&fin.code)
        || fin.strings.iter().any(|s| {
            !s.docstring
                && !s.bytes
                && text
                    .get(s.value.clone())
                    .is_some_and(|v| p.uses_device_value.is_match(v))
        });
    if uses_device && !p.sdaa_import.is_match(&fin.code) {
        if insert_sdaa_import(&mut lines, &fin) {
            out.rewrote("import-torch-sdaa", 1);
        } else {
            out.note(
                1,
                "import-torch-sdaa",
                "uses the SDAA device but never imports torch; add `import torch_sdaa` by hand",
            );
        }
    }
    // One apex-manual note per line: a refused apex amp conversion already explains its lines.
    let mut seen = BTreeSet::new();
    out.notes
        .retain(|n| n.rule != "apex-manual" || seen.insert(n.line));
    out.text = join(&lines);
    out.origin = lines.iter().map(|(no, _)| *no).collect();
    out
}

/// What the line rules need to know about the whole file.
#[derive(Clone, Copy)]
struct FileFacts {
    /// A module-level `import torch` (or `import os, torch`) binds `torch`.
    module_torch: bool,
    /// The code uses apex somewhere.
    apex: bool,
    /// `import triton` finds a project-local `triton` directory, not OpenAI Triton.
    local_triton: bool,
}

/// The code view of the statement starting on 0-based line `idx`: that line and its
/// continuation lines, joined by spaces (`\` continuations dropped).
fn statement_code(lexed: &pysrc::Lexed, idx: usize) -> String {
    let mut code = lexed.code_line(idx).trim_end().to_string();
    let mut next = idx + 1;
    while lexed.lines.get(next).is_some_and(|l| l.continued) {
        if let Some(stripped) = code.strip_suffix('\\') {
            code.truncate(stripped.len());
        }
        code.push(' ');
        code.push_str(lexed.code_line(next).trim());
        next += 1;
    }
    code
}

/// Whether a statement (its code view) imports torch or a torch submodule in any spelling:
/// `import torch`, `import torch as th`, `import argparse, torch, torch.nn as nn`,
/// `from torch import nn`, `import os; import torch`.
fn imports_torch(code: &str) -> bool {
    code.split(';').any(|part| {
        imported_modules(part)
            .iter()
            .any(|m| m == "torch" || m.starts_with("torch."))
    })
}

/// Whether a statement (its code view) binds the name `torch`: `import torch`,
/// `import torch.nn`, `import os, torch` — not `import torch as th`, not `from torch import nn`.
fn binds_torch(code: &str) -> bool {
    code.split(';').any(|part| {
        let Some(rest) = part.trim().strip_prefix("import ") else {
            return false;
        };
        rest.split(',').any(|item| {
            let words: Vec<&str> = item
                .split_whitespace()
                .map(|w| w.trim_matches(|c| c == '(' || c == ')'))
                .filter(|w| !w.is_empty())
                .collect();
            words
                .first()
                .is_some_and(|m| *m == "torch" || m.starts_with("torch."))
                && words.get(1) != Some(&"as")
        })
    })
}

/// Top-level modules of Triton Inference Server and NVIDIA's tools around it: its clients
/// (`tritonclient`, and the old `tritongrpcclient`/`tritonhttpclient`/`tritonclientutils`),
/// the in-process server (`tritonserver`), the Python backend's `triton_python_backend_utils`,
/// PyTriton and the Triton Model Navigator.
const TRITON_SERVER_MODULES: &[&str] = &[
    "tritonclient",
    "tritonserver",
    "triton_python_backend_utils",
    "tritongrpcclient",
    "tritonhttpclient",
    "tritonclientutils",
    "tritonshmutils",
    "pytriton",
    "model_navigator",
];

/// OpenAI Triton's submodules and top-level names (`triton.language`, `triton.jit`, …): an
/// import of `triton.<anything else>` is some other `triton` package (NVIDIA's deployment
/// scripts keep theirs in a `triton/` directory).
const OPENAI_TRITON: &[&str] = &[
    "language",
    "runtime",
    "compiler",
    "testing",
    "ops",
    "backends",
    "tools",
    "jit",
    "autotune",
    "heuristics",
    "Config",
    "cdiv",
    "next_power_of_2",
    "profiler",
    "experimental",
    "knobs",
    "errors",
    "_C",
];

/// Where a Python file shows itself to be Triton Inference Server code, by an import of one of
/// [`TRITON_SERVER_MODULES`] or its Python backend's `pb_utils`: `(1-based line, why)`.
pub(crate) fn triton_server_import(text: &str) -> Option<(usize, String)> {
    if !(text.contains("triton") || text.contains("pb_utils") || text.contains("model_navigator")) {
        return None;
    }
    let lexed = pysrc::lex_without_names(text);
    for idx in 0..lexed.lines.len() {
        let code = lexed.code_line(idx);
        if lexed.statement(idx + 1) {
            for part in code.split(';') {
                let t = part.trim_start();
                if !(t.starts_with("import ") || t.starts_with("from ")) {
                    continue;
                }
                for m in imported_modules(part) {
                    let top = m.split('.').next().unwrap_or("");
                    if TRITON_SERVER_MODULES.contains(&top) {
                        return Some((idx + 1, format!("imports `{m}`")));
                    }
                }
            }
        }
        if code.contains("pb_utils.") && patterns().pb_utils.is_match(code) {
            return Some((
                idx + 1,
                "uses `pb_utils`, the Python backend's triton_python_backend_utils".into(),
            ));
        }
    }
    None
}

/// Whether this line (its code view) uses OpenAI Triton: a `@triton.jit` / `autotune` /
/// `heuristics` kernel, or an import of `triton` or one of its own submodules — unless a
/// project-local `triton` directory is what that import finds.
fn openai_triton(code: &str, statement: bool, local_triton: bool) -> bool {
    if patterns().triton_decorator.is_match(code) {
        return true;
    }
    if !statement || local_triton || !code.contains("triton") {
        return false;
    }
    code.split(';').any(|part| {
        let t = part.trim_start();
        if !(t.starts_with("import ") || t.starts_with("from ")) {
            return false;
        }
        let from_triton = t
            .strip_prefix("from ")
            .is_some_and(|r| r.split_whitespace().next() == Some("triton"));
        imported_modules(part)
            .iter()
            .any(|m| match m.split_once('.') {
                None => m == "triton",
                Some(("triton", rest)) => {
                    from_triton || OPENAI_TRITON.contains(&rest.split('.').next().unwrap_or(""))
                }
                Some(_) => false,
            })
    })
}

/// The CUDA-only library a guard names, as people know it, from the word the pattern found.
fn library_name(word: &str) -> &'static str {
    match word.to_ascii_lowercase().as_str() {
        "apex" => "apex",
        "amp_c" | "apex_c" => "apex's compiled kernels (amp_C)",
        "cupy" => "CuPy",
        "triton" => "Triton",
        "dali" => "NVIDIA DALI",
        "pynvml" | "nvml" => "NVML",
        _ => "cuDNN",
    }
}

/// The guards that stay CUDA (the `cuda-only-guard` rule): a statement calling
/// `torch.cuda.is_available()` or `torch.cuda.device_count()` is kept as written, with the block
/// it guards, when
///
/// - the statement itself (its condition, an assert's message, the message of a block that only
///   raises, a flag such as `has_apex`) names a CUDA-only library — apex, amp_C, CuPy, Triton,
///   DALI, NVML, cuDNN —, or
/// - it opens a block (`if`/`elif`/`while`) that names one of those libraries in code (an
///   import, a call, a flag; cuDNN excepted), or whose every statement is a cuDNN /
///   `torch.backends.cuda` setting,
///
/// and neither the statement nor the block moves anything to the device (`.cuda(`, `.to(`,
/// `torch.device(`, `set_device`, a `"cuda"` string): that is device selection, which the port
/// needs. On SDAA `torch.cuda.is_available()` is false, so a kept guard skips the CUDA-only
/// path (an assert fails with its own message) instead of running it on a device it cannot use.
/// Returns, per line of `lines`, whether it is kept; each kept guard is a finding.
fn cuda_only_guards(
    lines: &[(usize, String)],
    lexed: &pysrc::Lexed,
    out: &mut FileOutcome,
) -> Vec<bool> {
    let p = patterns();
    let mut kept = vec![false; lines.len()];
    if !p.guard_call.is_match(&lexed.code) {
        return kept;
    }
    let n = lexed.lines.len().min(lines.len());
    let raw = |a: usize, b: usize| -> String {
        // The statement as written minus comments: strings count here (an assert's message).
        (a..b)
            .map(|k| strip_comment(lines[k].1.as_str()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut idx = 0;
    while idx < n {
        if !lexed.statement(idx + 1) {
            idx += 1;
            continue;
        }
        let mut end = idx + 1;
        while end < n && lexed.lines[end].continued {
            end += 1;
        }
        let code = statement_code(lexed, idx);
        let Some(call) = p.guard_call.captures(&code).map(|c| c[1].to_string()) else {
            idx = end;
            continue;
        };
        let head = code.trim_start();
        let word = head
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        let compound = matches!(word, "if" | "elif" | "while") && head.trim_end().ends_with(':');
        // The block under a compound header: every line up to the next statement indented no
        // deeper than the header.
        let indent = lexed.lines[idx].indent;
        let mut body_end = end;
        if compound {
            while body_end < n
                && (!lexed.statement(body_end + 1) || lexed.lines[body_end].indent > indent)
            {
                body_end += 1;
            }
            // Trailing blank lines belong to what follows.
            while body_end > end && lexed.lines[body_end - 1].blank {
                body_end -= 1;
            }
        }
        let mut stmt_text = raw(idx, end);
        // `if not torch.cuda.is_available(): raise RuntimeError("apex needs CUDA")`: a block
        // that only raises is the guard's message.
        let body_statements: Vec<usize> = (end..body_end)
            .filter(|&k| lexed.statement(k + 1))
            .collect();
        if let [only] = body_statements[..] {
            if lexed.code_line(only).trim_start().starts_with("raise") {
                stmt_text.push(' ');
                stmt_text.push_str(&raw(only, body_end));
            }
        }
        let body_code: String = (end..body_end).map(|k| lexed.code_line(k)).collect();
        let device_work =
            p.device_work.is_match(&stmt_text) || p.device_work.is_match(&raw(end, body_end));
        let named = p
            .cuda_only_lib
            .captures(&stmt_text)
            .map(|c| library_name(&c[1]))
            .or_else(|| {
                p.cuda_only_lib
                    .captures_iter(&body_code)
                    .map(|c| library_name(&c[1]))
                    .find(|lib| *lib != "cuDNN")
            })
            .or_else(|| {
                let all = body_statements
                    .iter()
                    .all(|&k| p.cuda_setting.is_match(lexed.code_line(k).trim_end()));
                (compound && !body_statements.is_empty() && all)
                    .then_some("cuDNN / torch.backends.cuda settings")
            });
        let Some(lib) = named.filter(|_| !device_work) else {
            idx = end;
            continue;
        };
        for k in kept.iter_mut().take(body_end).skip(idx) {
            *k = true;
        }
        let raises = body_statements.len() == 1
            && body_statements
                .first()
                .is_some_and(|&k| lexed.code_line(k).trim_start().starts_with("raise"));
        let what = match word {
            "assert" => "this assert fails on SDAA, with its own message".to_string(),
            _ if raises => "on SDAA it raises, with its own message".to_string(),
            _ if compound => {
                "on SDAA it is false, so the block under it is skipped there".to_string()
            }
            _ => "on SDAA it is false".to_string(),
        };
        out.note(
            lines[idx].0,
            "cuda-only-guard",
            format!(
                "`torch.cuda.{call}()` kept as CUDA (not torch.sdaa): it guards {lib}, which is CUDA-only with no SDAA build; {what} — port that path by hand if SDAA needs it"
            ),
        );
        idx = end;
    }
    kept
}

/// What a string literal's value asks of its line.
enum Hit {
    /// Replace bytes `range` of the line (same length: `cuda` → `sdaa`, …).
    Edit {
        range: Range<usize>,
        with: &'static str,
        rule: &'static str,
    },
    /// An `NCCL_*` variable named as data.
    NcclEnv(String),
    /// `nvidia-smi` run as a command.
    NvidiaSmi,
    /// A `.cu` source in a file that builds torch extensions.
    CudaSource,
}

/// The string rules: for each literal that is data (not a docstring, not bytes), what its value
/// asks of the line it is on, as `(0-based line, hit)` in line order.
fn string_hits(text: &str, lexed: &pysrc::Lexed) -> Vec<(usize, Hit)> {
    let p = patterns();
    let builds = p.cpp_ext_build.is_match(&lexed.code);
    let mut hits = Vec::new();
    let at = |hits: &mut Vec<(usize, Hit)>, abs: usize, make: &dyn Fn(usize) -> Hit| {
        let line = lexed.line_of(abs);
        let start = lexed.line_starts.get(line).copied().unwrap_or(0);
        hits.push((line, make(abs - start)));
    };
    for s in &lexed.strings {
        if s.docstring || s.bytes {
            continue;
        }
        let Some(value) = text.get(s.value.clone()) else {
            continue;
        };
        let base = s.value.start;
        if p.device_value.is_match(value) {
            at(&mut hits, base, &|r| Hit::Edit {
                range: r..r + 4,
                with: "sdaa",
                rule: "device-string",
            });
        } else if value == "nccl" {
            at(&mut hits, base, &|r| Hit::Edit {
                range: r..r + 4,
                with: "tccl",
                rule: "ddp-backend",
            });
        }
        for m in p.visible_value.find_iter(value) {
            at(&mut hits, base + m.start(), &|r| Hit::Edit {
                range: r..r + "CUDA_VISIBLE_DEVICES".len(),
                with: "SDAA_VISIBLE_DEVICES",
                rule: "visible-devices",
            });
        }
        for m in p.nccl_env_value.find_iter(value) {
            let name = m.as_str().trim_end_matches('=').to_string();
            at(&mut hits, base + m.start(), &|_| Hit::NcclEnv(name.clone()));
        }
        if let Some(m) = p.nvidia_smi_value.find(value) {
            at(&mut hits, base + m.start(), &|_| Hit::NvidiaSmi);
        }
        if builds && p.cu_source_value.is_match(value) {
            at(&mut hits, base, &|_| Hit::CudaSource);
        }
    }
    // Literals come in order; hits inside one multi-line literal stay in order too.
    hits.sort_by_key(|(line, _)| *line);
    hits
}

/// Replaces each match of `re` in the code view `code` — and the same bytes of `line`, which
/// it mirrors — by what `with` returns for it (`None`: left as is). Returns how many.
fn replace_code(
    line: &mut String,
    code: &mut String,
    re: &Regex,
    mut with: impl FnMut(&Captures) -> Option<String>,
) -> usize {
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    for c in re.captures_iter(code) {
        let Some(m) = c.get(0) else { continue };
        if !(line.is_char_boundary(m.start()) && line.is_char_boundary(m.end())) {
            continue;
        }
        if let Some(new) = with(&c) {
            edits.push((m.range(), new));
        }
    }
    for (range, new) in edits.iter().rev() {
        line.replace_range(range.clone(), new);
        code.replace_range(range.clone(), new);
    }
    edits.len()
}

/// The modules an import statement (its code view) imports: `import a.b as c, d` → `a.b`, `d`;
/// `from x import y, z` → `x`, `x.y`, `x.z`.
fn imported_modules(code: &str) -> Vec<String> {
    let code = code.trim();
    let clean = |name: &str| {
        name.split_whitespace()
            .next()
            .unwrap_or("")
            .trim_matches(|c| c == '(' || c == ')' || c == '\\')
            .to_string()
    };
    if let Some(rest) = code.strip_prefix("import ") {
        return rest
            .split(',')
            .map(clean)
            .filter(|m| !m.is_empty())
            .collect();
    }
    let Some(rest) = code.strip_prefix("from ") else {
        return Vec::new();
    };
    let Some((module, names)) = rest.split_once(" import ") else {
        return Vec::new();
    };
    let module = module.trim();
    let mut out = vec![module.to_string()];
    for name in names.split(',').map(clean).filter(|n| !n.is_empty()) {
        out.push(format!("{module}.{name}"));
    }
    out
}

/// Applies the single-line rules to one line: `code` is its code view (see
/// [`pysrc::Lexed::code`]), `hits` what its string literals ask. Code rules match the code
/// view only, and reports name the line as written.
fn migrate_line(
    line: &mut String,
    code: &mut String,
    no: usize,
    info: pysrc::LineInfo,
    file: FileFacts,
    hits: Vec<Hit>,
    out: &mut FileOutcome,
) {
    let p = patterns();
    let shown = strip_comment(line).trim().to_string();

    // String values first; their edits keep the length, so later offsets still hold.
    let mut nccl: Vec<String> = Vec::new();
    let mut cu_source = false;
    for hit in hits {
        match hit {
            Hit::Edit { range, with, rule } => {
                if line.get(range.clone()).is_some() && code.get(range.clone()).is_some() {
                    line.replace_range(range.clone(), with);
                    code.replace_range(range, &" ".repeat(with.len()));
                    out.rewrote(rule, 1);
                }
            }
            Hit::NcclEnv(name) => nccl.push(name),
            Hit::NvidiaSmi => out.note(
                no,
                "nvidia-only",
                format!("nvidia-smi queries NVIDIA GPUs and has no SDAA equivalent; port by hand: {shown}"),
            ),
            Hit::CudaSource => cu_source = true,
        }
    }

    // Reports: they look at the original spelling, in code.
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
    for cap in p.backends_cuda.captures_iter(code) {
        let what = cap.get(1).map_or("torch.backends.cuda".to_string(), |m| {
            format!("torch.backends.cuda.{}", m.as_str())
        });
        out.note(
            no,
            "torch-backends-cuda",
            format!("{what} is a CUDA-only setting with no SDAA equivalent; kept as is (no effect on SDAA)"),
        );
    }
    if cu_source || p.cpp_ext.is_match(code) {
        out.note(
            no,
            "cpp-extension-cuda",
            format!("CUDA extension build: {shown}"),
        );
    }
    if p.cupy.is_match(code) {
        out.note(no, "cupy", format!("cupy: {shown}"));
    }
    if openai_triton(code, info.statement(), file.local_triton) {
        out.note(no, "triton", format!("triton: {shown}"));
    }
    if p.data_parallel.is_match(code) && !info.def_header {
        out.note(no, "data-parallel", DATA_PARALLEL);
    }
    if p.nvml.is_match(code) {
        out.note(
            no,
            "nvidia-only",
            format!("NVML (pynvml) queries NVIDIA GPUs and has no SDAA equivalent; port by hand: {shown}"),
        );
    }
    if p.dali.is_match(code) {
        out.note(
            no,
            "nvidia-only",
            format!("NVIDIA DALI runs its pipeline on NVIDIA GPUs only; replace it (e.g. a torch DataLoader): {shown}"),
        );
    }
    nccl.extend(p.nccl_env.find_iter(code).map(|m| m.as_str().to_string()));
    let mut seen = BTreeSet::new();
    for name in nccl {
        if seen.insert(name.clone()) {
            out.note(
                no,
                "nccl-env",
                format!("{name} is an NCCL setting; TCCL does not read NCCL_* variables: find the TCCL equivalent or drop it"),
            );
        }
    }
    for cap in p.accelerator_unsupported.captures_iter(code) {
        let call = &cap[1];
        let instead = ACCELERATOR_UNSUPPORTED
            .iter()
            .find(|(name, _)| *name == call)
            .and_then(|(_, instead)| *instead);
        out.note(
            no,
            "torch-accelerator",
            match instead {
                Some(sdaa) => format!("torch.accelerator.{call}() fails on sdaa: torch_sdaa's allocator is not a c10 DeviceAllocator (\"Allocator for sdaa is not a DeviceAllocator\"); call {sdaa} instead"),
                None => format!("torch.accelerator.{call}() fails on sdaa (\"Backend doesn't support getting device capabilities\"); decide the supported dtypes by hand"),
            },
        );
    }

    // apex's compiled kernels: each import (and `apex.<kernel module>` use) names what to use.
    let mut kernels: Vec<(String, &'static str)> = Vec::new();
    if info.statement() {
        for module in imported_modules(code) {
            if let Some(instead) = apex_kernel(&module, file.apex) {
                kernels.push((module, instead));
            }
        }
    }
    for m in p.apex_kernel_attr.find_iter(code) {
        if let Some(instead) = apex_kernel(m.as_str(), true) {
            kernels.push((m.as_str().to_string(), instead));
        }
    }
    // `from apex.optimizers import FusedAdam` names the module and the class: one finding.
    let mut kernel_noted = false;
    let mut named: Vec<&str> = Vec::new();
    for (module, instead) in &kernels {
        if named.contains(instead) {
            continue;
        }
        named.push(instead);
        kernel_noted = true;
        out.note(
            no,
            "apex-kernels",
            format!("`{module}` is apex's compiled CUDA code, which has no SDAA build; use instead: {instead} (`{shown}`)"),
        );
    }

    if file.apex {
        for cap in p.apex_ddp_kwarg.captures_iter(code) {
            out.note(
                no,
                "apex-ddp",
                format!("`{}=` is an apex DDP option torch's DistributedDataParallel does not take; remove it", &cap[1]),
            );
        }
    }

    // apex DDP: only a plain `from apex.parallel import DistributedDataParallel [as X]`
    // statement; an import of more names is left (and reported) rather than broken.
    if info.statement() {
        if let Some(cap) = p
            .apex_ddp_import
            .captures(line.trim_end_matches(['\r', '\n']))
        {
            let new = format!(
                "{}from torch.nn.parallel import DistributedDataParallel{}{}{}",
                &cap[1],
                &cap[2],
                &cap[3],
                line_ending(line)
            );
            *line = new;
            let kept = strip_comment(line).len();
            *code = format!("{}{}", &line[..kept], " ".repeat(line.len() - kept));
            out.rewrote("apex-ddp", 1);
        }
    }
    // `apex.parallel.DistributedDataParallel` → torch's: only where the module binds `torch`.
    if file.module_torch {
        let n = replace_code(line, code, &p.apex_ddp_attr, |_| {
            Some("torch.nn.parallel.DistributedDataParallel".into())
        });
        out.rewrote("apex-ddp", n);
    }
    if !kernel_noted && p.apex_any.is_match(code) {
        out.note(
            no,
            "apex-manual",
            format!("apex use left as is: {}", strip_comment(line).trim()),
        );
    }

    let n = replace_code(line, code, &p.cuda_method, |_| Some(".sdaa(".into()));
    out.rewrote("cuda-method", n);
    let n = replace_code(line, code, &p.is_cuda, |_| Some(".is_sdaa".into()));
    out.rewrote("is-cuda", n);

    // `torch.cuda[.attr]`
    let mut unsupported = Vec::new();
    let n = replace_code(line, code, &p.torch_cuda, |c| match c.get(1) {
        Some(a) if TORCH_CUDA_UNSUPPORTED.contains(&a.as_str()) => {
            unsupported.push(a.as_str().to_string());
            None
        }
        Some(a) => Some(format!("torch.sdaa.{}", a.as_str())),
        None => Some("torch.sdaa".into()),
    });
    out.rewrote("torch-cuda", n);
    for a in unsupported {
        out.note(
            no,
            "torch-cuda-unsupported",
            format!("torch.cuda.{a} has no SDAA equivalent; kept as is"),
        );
    }

    // `dist.Backend.NCCL` → `'tccl'`.
    let n = replace_code(line, code, &p.backend_nccl, |_| Some("'tccl'".into()));
    out.rewrote("ddp-backend", n);
    // `CUDA_VISIBLE_DEVICES` as a name in code (`env=dict(CUDA_VISIBLE_DEVICES="0")`).
    let n = replace_code(line, code, &p.visible, |_| {
        Some("SDAA_VISIBLE_DEVICES".into())
    });
    out.rewrote("visible-devices", n);
}

/// apex amp → torch.sdaa.amp (see the `apex-amp` rule), all or nothing per file: when any
/// part cannot be ported safely, every apex amp line is left as it is and reported.
fn migrate_apex_amp(
    lines: Vec<(usize, String)>,
    lexed: &pysrc::Lexed,
    out: &mut FileOutcome,
) -> Vec<(usize, String)> {
    let p = patterns();
    match convert_apex_amp(&lines, lexed) {
        Ok(done) => {
            out.rewrote("apex-amp", done.rewrites);
            out.notes.extend(done.notes);
            done.lines
        }
        Err(reason) => {
            let imports: BTreeSet<usize> = lines
                .iter()
                .filter(|(no, l)| lexed.statement(*no) && p.apex_amp_any.is_match(l))
                .map(|(no, _)| *no)
                .collect();
            for no in &imports {
                out.note(
                    *no,
                    "apex-manual",
                    format!("apex amp not converted: {reason}; every amp line of this file is left as is — port them to torch.sdaa.amp (autocast + GradScaler) by hand"),
                );
            }
            for no in lexed.variable_lines("amp") {
                if imports.contains(&no) {
                    continue;
                }
                let code = lines
                    .get(no - 1)
                    .map_or("", |(_, l)| strip_comment(l).trim());
                out.note(no, "apex-manual", format!("apex amp left as is: {code}"));
            }
            lines
        }
    }
}

struct AmpConversion {
    lines: Vec<(usize, String)>,
    rewrites: usize,
    notes: Vec<Note>,
}

/// The conversion of the canonical apex amp shapes, checked: `Err` says why it would not run.
fn convert_apex_amp(
    lines: &[(usize, String)],
    lexed: &pysrc::Lexed,
) -> Result<AmpConversion, String> {
    let p = patterns();
    let stmt = |no: usize| lexed.statement(no);
    for (no, line) in lines {
        if !stmt(*no) || !p.apex_amp_any.is_match(line) {
            continue;
        }
        if !leading_ws(line).is_empty() {
            return Err("`from apex import amp` sits inside a block (a try/except fallback or a condition), and removing it would change what that block does".into());
        }
        if !p.apex_amp_import.is_match(line.trim_end()) {
            return Err(format!(
                "`{}` is not a plain `from apex import amp`",
                strip_comment(line).trim()
            ));
        }
    }
    if !lexed.variable_lines("scaler").is_empty() {
        return Err(
            "the file already has a variable named `scaler`, the name the GradScaler would take"
                .into(),
        );
    }
    let imports_torch = lines.iter().any(|(no, l)| {
        stmt(*no) && l.starts_with("import") && binds_torch(&statement_code(lexed, no - 1))
    });

    let mut done = AmpConversion {
        lines: Vec::with_capacity(lines.len() + 2),
        rewrites: 0,
        notes: Vec::new(),
    };
    // Indices into done.lines of GradScaler creations and uses, and (with, step) pairs.
    let mut defs: Vec<usize> = Vec::new();
    let mut uses: Vec<usize> = Vec::new();
    let mut pairs: Vec<(usize, usize, String)> = Vec::new();
    let mut removed: BTreeSet<String> = BTreeSet::new();
    // Optimizers whose next `.step()` must go through the scaler: optimizer → indices of the
    // `with` lines waiting for it, oldest first.
    let mut pending: BTreeMap<String, VecDeque<usize>> = BTreeMap::new();
    let mut i = 0;
    while i < lines.len() {
        let (no, line) = &lines[i];
        let no = *no;
        let eol = line_ending(line);
        // A line inserted after one without a newline (the file's last) needs one of its own.
        let sep = if eol.is_empty() { "\n" } else { eol };
        if !stmt(no) {
            done.lines.push((no, line.clone()));
            i += 1;
            continue;
        }
        if p.apex_amp_import.is_match(line.trim_end()) {
            // torch.sdaa.amp lives in torch: keep one `import torch`, never a duplicate.
            if !imports_torch {
                done.lines.push((no, format!("import torch{eol}")));
            }
            done.rewrites += 1;
            i += 1;
            continue;
        }
        if let Some(cap) = p
            .amp_initialize
            .captures(line.trim_end_matches(['\r', '\n']))
        {
            let indent = cap[1].to_string();
            defs.push(done.lines.len());
            done.lines.push((
                no,
                format!("{indent}scaler = torch.sdaa.amp.GradScaler(){eol}"),
            ));
            done.rewrites += 1;
            done.notes.push(Note {
                line: no,
                rule: "apex-amp",
                message: "apex amp.initialize autocast the forward pass implicitly (and its opt_level/loss_scale options are not carried over); wrap the forward pass and loss in `with torch.sdaa.amp.autocast():`".into(),
            });
            i += 1;
            continue;
        }
        if let Some(cap) = p
            .amp_scale_loss
            .captures(line.trim_end_matches(['\r', '\n']))
        {
            let indent = cap[1].to_string();
            let (loss, opt, scaled) = (cap[2].to_string(), cap[3].to_string(), cap[4].to_string());
            // The block must be exactly `scaled.backward(...)`.
            let body = lines
                .get(i + 1)
                .map(|(_, l)| strip_comment(l).trim())
                .unwrap_or("");
            let body_ok = body.starts_with(&format!("{scaled}.backward("))
                && body.ends_with(')')
                && lines
                    .get(i + 1)
                    .is_some_and(|(n, l)| stmt(*n) && leading_ws(l).len() > indent.len());
            let block_ends = lines
                .get(i + 2)
                .map(|(n, l)| {
                    !lexed.lines.get(n - 1).is_some_and(|info| info.continued)
                        && (l.trim().is_empty() || leading_ws(l).len() <= indent.len())
                })
                .unwrap_or(true);
            if !(body_ok && block_ends) {
                return Err("an `amp.scale_loss` block is more than one `.backward()` call".into());
            }
            let args = body[scaled.len() + ".backward".len()..].to_string();
            let beol = line_ending(&lines[i + 1].1);
            uses.push(done.lines.len());
            pending.entry(opt).or_default().push_back(done.lines.len());
            done.lines.push((
                no,
                format!("{indent}scaler.scale({loss}).backward{args}{beol}"),
            ));
            removed.insert(scaled);
            done.rewrites += 1;
            i += 2;
            continue;
        }
        // `opt.step()` after a converted scale_loss.
        let code = strip_comment(line).trim();
        let waiting = code
            .strip_suffix(".step()")
            .and_then(|opt| Some((opt, pending.get_mut(opt)?.pop_front()?)));
        if let Some((opt, with)) = waiting {
            let opt = opt.to_string();
            let indent = leading_ws(line);
            uses.push(done.lines.len());
            pairs.push((with, done.lines.len(), opt.clone()));
            done.lines
                .push((no, format!("{indent}scaler.step({opt}){sep}")));
            uses.push(done.lines.len());
            done.lines
                .push((no, format!("{indent}scaler.update(){eol}")));
            done.rewrites += 1;
            i += 1;
            continue;
        }
        done.lines.push((no, line.clone()));
        i += 1;
    }
    let unstepped = pending
        .iter()
        .flat_map(|(opt, withs)| withs.iter().map(move |w| (*w, opt)))
        .min();
    if let Some((_, opt)) = unstepped {
        return Err(format!(
            "no `{opt}.step()` follows its `amp.scale_loss(..., {opt})` block"
        ));
    }

    // Check the result: no name the rewrite removed is still used, and the GradScaler exists
    // on every path that uses it.
    let result = pysrc::lex(&join(&done.lines));
    let shown = |idx: usize| {
        done.lines
            .get(idx)
            .map_or(String::new(), |(_, l)| strip_comment(l).trim().to_string())
    };
    if let Some(&l) = result.variable_lines("amp").first() {
        return Err(format!(
            "`amp` would still be used after the rewrite (`{}`)",
            shown(l - 1)
        ));
    }
    for name in &removed {
        if let Some(&l) = result.variable_lines(name).first() {
            return Err(format!(
                "`{name}` of `amp.scale_loss(...) as {name}` is used outside that block (`{}`)",
                shown(l - 1)
            ));
        }
    }
    // Each use needs a creation that dominates it. One sweep: the blocks the creations open
    // nest (a creation inside another's block ends no later), so the open ones form a stack.
    let mut open: Vec<usize> = Vec::new();
    let mut next_def = defs.iter().peekable();
    for &u in &uses {
        while let Some(&d) = next_def.next_if(|&&d| d < u) {
            while open.last().is_some_and(|&reach| reach < d + 1) {
                open.pop();
            }
            // Conservative if the blocks ever did not nest: never wider than the enclosing one.
            let reach = result
                .reach(d + 1)
                .min(open.last().copied().unwrap_or(usize::MAX));
            open.push(reach);
        }
        while open.last().is_some_and(|&reach| reach < u + 1) {
            open.pop();
        }
        if open.is_empty() {
            return Err(format!(
                "the GradScaler `amp.initialize` would become is not created on every path that reaches `{}`",
                shown(u)
            ));
        }
    }
    crate::meter::add((defs.len() + uses.len()) as u64);
    for (with, step, opt) in &pairs {
        if !result.dominates(with + 1, step + 1) {
            return Err(format!(
                "`{opt}.step()` also runs on paths where the loss was not scaled by `amp.scale_loss`"
            ));
        }
    }
    Ok(done)
}

/// The line added to a module that uses the device. `import torch_sdaa` registers the sdaa
/// device and is never referred to by name, so pyflakes would call it unused (F401).
pub const SDAA_IMPORT: &str = "import torch_sdaa  # noqa: F401";

/// Inserts [`SDAA_IMPORT`] after the first statement importing torch in any spelling (see
/// [`imports_torch`]; after its closing parenthesis or last continuation line), at that
/// statement's indentation; `false` when the module has none. An `import torch` inside a
/// docstring or a string is not a statement and is passed over.
fn insert_sdaa_import(lines: &mut Vec<(usize, String)>, lexed: &pysrc::Lexed) -> bool {
    let Some(start) = (0..lines.len().min(lexed.lines.len())).find(|&i| {
        lexed.statement(i + 1)
            && lexed.code_line(i).contains("import")
            && imports_torch(&statement_code(lexed, i))
    }) else {
        return false;
    };
    let indent = leading_ws(&lines[start].1).to_string();
    let mut end = start;
    while end + 1 < lines.len() && lexed.lines.get(end + 1).is_some_and(|l| l.continued) {
        end += 1;
    }
    let eol = match line_ending(&lines[end].1) {
        "" => {
            // The file's last line: it needs a newline before the added one.
            lines[end].1.push('\n');
            "\n"
        }
        eol => eol,
    };
    lines.insert(end + 1, (0, format!("{indent}{SDAA_IMPORT}{eol}")));
    true
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
