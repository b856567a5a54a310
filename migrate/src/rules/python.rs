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

mod amp;
mod guards;
mod triton;

use amp::migrate_apex_amp;
use guards::cuda_only_guards;
use triton::openai_triton;
pub(crate) use triton::triton_server_import;

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
        if p.device_value.is_match(value) && !path_argument(&lexed.code, base) {
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

/// Whether the string literal whose value starts at byte `at` of the code view is an argument
/// of a path call — `os.path.join(src, "cuda", "*.cu")`, `glob.glob(...)`, `Path(...)`: a
/// directory named `cuda` (an extension's CUDA sources, Deformable-DETR's setup.py), never a
/// device. Looks back at most 4 KiB for the call's opening bracket.
fn path_argument(code: &str, at: usize) -> bool {
    let from = at.saturating_sub(4096);
    let Some(before) = code.get(from..at) else {
        return false;
    };
    let mut depth = 0usize;
    for (i, c) in before.char_indices().rev() {
        match c {
            ')' | ']' | '}' => depth += 1,
            '(' | '[' | '{' if depth > 0 => depth -= 1,
            '(' => {
                let callee = before[..i].trim_end();
                return ["path.join", "glob", "iglob", "Path", "PurePath"]
                    .iter()
                    .any(|f| callee.ends_with(f));
            }
            '[' | '{' => return false,
            _ => {}
        }
    }
    false
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
