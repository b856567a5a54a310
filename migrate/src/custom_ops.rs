//! Custom ops: the C++/CUDA extensions a project builds, the op names they register, the Python
//! `torch.autograd.Function` wrappers that call them, where those wrappers are applied, and a
//! pure-PyTorch twin when the project ships one (Deformable-DETR's
//! `ms_deform_attn_core_pytorch`). No rule can migrate such an op: a person writes its device
//! implementation, proves it against a reference (`modelzoo op check`) and routes the wrapper to
//! it (`modelzoo port --op`). This inventory is what they start from, in MIGRATION.md and as JSON.
//!
//! Found by patterns over the code (comments and, in Python, string contents blanked first),
//! so a name that only appears in a comment or a docstring is not an op.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::pysrc;

/// Files larger than this are not read for the inventory (generated sources, vendored blobs).
const MAX_SOURCE_BYTES: u64 = 4 << 20;

/// Where something is: a path relative to the project root and a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Location {
    pub path: PathBuf,
    pub line: usize,
}

/// One op an extension registers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegisteredOp {
    /// As Python calls it: `ms_deform_attn_forward` on the module, or `ns::name` for
    /// `torch.ops.ns.name`.
    pub name: String,
    pub at: Location,
}

/// One C++/CUDA extension of the project.
#[derive(Debug, Clone, Serialize)]
pub struct Extension {
    /// The module Python imports (`MultiScaleDeformableAttention`), or `torch.ops.<ns>` for a
    /// `TORCH_LIBRARY` namespace.
    pub name: String,
    /// How its ops are registered: `pybind11` (`PYBIND11_MODULE` / `m.def`) or `torch-library`.
    pub registration: &'static str,
    /// Where it is built (`CUDAExtension(...)` / `CppExtension(...)` in setup.py, or
    /// `torch.utils.cpp_extension.load(...)`), when the project builds it.
    pub built_at: Option<Location>,
    /// Its C++/CUDA sources.
    pub sources: Vec<PathBuf>,
    /// `__global__` CUDA kernels in those sources: what an SDAA implementation replaces.
    pub cuda_kernels: usize,
    /// Dispatch keys with kernels (`TORCH_LIBRARY_IMPL(ns, CUDA, m)` → `CUDA`).
    pub dispatch_keys: Vec<String>,
    pub ops: Vec<RegisteredOp>,
}

/// A pure-PyTorch function beside a wrapper that computes the same op: the reference the
/// device implementation is checked against and what the CPU baseline can run.
#[derive(Debug, Clone, Serialize)]
pub struct Twin {
    pub function: String,
    /// `module:function`, the form `modelzoo port --op` and `modelzoo op check` take.
    pub target: String,
    pub at: Location,
}

/// A `torch.autograd.Function` subclass that calls an extension's ops.
#[derive(Debug, Clone, Serialize)]
pub struct Wrapper {
    pub class: String,
    /// `module:Class` (the module from the project root).
    pub target: String,
    pub at: Location,
    /// The extension it calls.
    pub extension: String,
    /// The extension ops it calls.
    pub calls: Vec<String>,
    /// Every `Class.apply(...)` in the project.
    pub call_sites: Vec<Location>,
    pub twin: Option<Twin>,
}

/// The project's custom ops (empty when it has none).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CustomOps {
    pub extensions: Vec<Extension>,
    pub wrappers: Vec<Wrapper>,
}

impl CustomOps {
    pub fn is_empty(&self) -> bool {
        self.extensions.is_empty() && self.wrappers.is_empty()
    }
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("custom-op pattern compiles")
}

static PYBIND_MODULE: LazyLock<Regex> =
    LazyLock::new(|| re(r"\bPYBIND11_MODULE\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)"));
static TORCH_LIBRARY: LazyLock<Regex> =
    LazyLock::new(|| re(r"\bTORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)"));
static TORCH_LIBRARY_IMPL: LazyLock<Regex> =
    LazyLock::new(|| re(r"\bTORCH_LIBRARY_IMPL\s*\(\s*(\w+)\s*,\s*(\w+)\s*,\s*\w+\s*\)"));
static DEF: LazyLock<Regex> = LazyLock::new(|| re(r#"\b(\w+)\s*\.\s*def\s*\(\s*"([^"]+)""#));
static GLOBAL: LazyLock<Regex> = LazyLock::new(|| re(r"\b__global__\b"));
static CALL: LazyLock<Regex> = LazyLock::new(|| re(r"\b(\w+)\s*\("));
static EXTENSION_ALIAS: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?m)^[ \t]*(\w+)[ \t]*=[ \t]*(?:[\w.]+\.)?(?:CUDAExtension|CppExtension)[ \t]*$")
});
static EXTENSION_IMPORT_AS: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b(?:CUDAExtension|CppExtension)[ \t]+as[ \t]+(\w+)"));
static LOAD_SOURCES: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b(?:sources|cpp_sources|cuda_sources)\s*="));
static BOUND_BUILD: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*(\w+)\s*=\s*(?:[\w.]+\.)?load(?:_inline)?\s*\("));
static NAME_KWARG: LazyLock<Regex> = LazyLock::new(|| re(r"\bname\s*="));
static IMPORT_AS: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?m)^[ \t]*import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?[ \t]*$"));
static FROM_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?m)^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+(\w+)(?:[ \t]+as[ \t]+(\w+))?[ \t]*$")
});
static FUNCTION_CLASS: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?m)^([ \t]*)class[ \t]+(\w+)[ \t]*\(([^)]*)\)[ \t]*:"));
static ATTR_CALL: LazyLock<Regex> = LazyLock::new(|| re(r"\b(\w+)\.(\w+)\s*\("));
static TORCH_OPS_CALL: LazyLock<Regex> =
    LazyLock::new(|| re(r"\btorch\.ops\.(\w+)\.(\w+)(?:\.\w+)?\s*\("));
static APPLY: LazyLock<Regex> = LazyLock::new(|| re(r"\b(\w+)\.apply\s*\("));
static TOP_DEF: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^def[ \t]+(\w+)[ \t]*\("));

/// Names of a pure-PyTorch twin: `*_pytorch*`, `*naive*`, `*reference*`, `*_ref`, `*python*`.
fn twin_like(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["pytorch", "naive", "reference", "python"]
        .iter()
        .any(|w| n.contains(w))
        || n.ends_with("_ref")
}

enum Source {
    Cxx,
    Python,
}

fn source_kind(path: &Path) -> Option<Source> {
    match path.extension()?.to_str()? {
        "cpp" | "cc" | "cxx" | "cu" | "cuh" | "h" | "hpp" => Some(Source::Cxx),
        "py" => Some(Source::Python),
        _ => None,
    }
}

/// The inventory of `root`'s custom ops. Unreadable or oversized files are left out (the
/// migration's own walk reports them as skipped).
pub fn find(root: &Path) -> CustomOps {
    let mut cxx: Vec<(PathBuf, String)> = Vec::new();
    let mut python: Vec<(PathBuf, String, pysrc::Lexed)> = Vec::new();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !crate::regular::skip_dir(e));
    for entry in walker.flatten() {
        if !entry.file_type().is_file() {
            continue;
        }
        let Some(kind) = source_kind(entry.path()) else {
            continue;
        };
        if entry
            .metadata()
            .map_or(true, |m| m.len() > MAX_SOURCE_BYTES)
        {
            continue;
        }
        let Ok(bytes) = crate::regular::read_regular(entry.path()) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap_or(entry.path())
            .to_path_buf();
        match kind {
            Source::Cxx => cxx.push((rel, strip_cxx_comments(&text))),
            Source::Python => {
                let lexed = pysrc::lex_without_names(&text);
                python.push((rel, text, lexed));
            }
        }
    }
    let mut extensions = registered_extensions(&cxx);
    attach_builds(&mut extensions, &python, &cxx);
    let wrappers = wrappers(&extensions, &python);
    CustomOps {
        extensions,
        wrappers,
    }
}

/// C++ text with `//` and `/* */` comments replaced by spaces (newlines kept, so lines count
/// the same); string and character literals are kept as they are.
fn strip_cxx_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    out.push(b' ');
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                out.extend_from_slice(b"  ");
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    out.push(if b[i] == b'\n' { b'\n' } else { b' ' });
                    i += 1;
                }
                let end = (i + 2).min(b.len());
                out.extend(std::iter::repeat_n(b' ', end - i));
                i = end;
            }
            q @ (b'"' | b'\'') => {
                out.push(q);
                i += 1;
                while i < b.len() && b[i] != q && b[i] != b'\n' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        out.push(b[i]);
                        i += 1;
                    }
                    out.push(b[i]);
                    i += 1;
                }
                if i < b.len() {
                    out.push(b[i]);
                    i += 1;
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn line_at(text: &str, pos: usize) -> usize {
    text[..pos].bytes().filter(|&b| b == b'\n').count() + 1
}

/// `m.def("name", …)` / `m.def("name(Tensor x) -> Tensor")` on the module variable `var`.
fn defs(path: &Path, text: &str, var: &str, namespace: Option<&str>) -> Vec<RegisteredOp> {
    DEF.captures_iter(text)
        .filter(|c| &c[1] == var)
        .map(|c| {
            let schema = &c[2];
            let name = schema.split(['(', '.']).next().unwrap_or(schema).trim();
            RegisteredOp {
                name: match namespace {
                    Some(ns) => format!("{ns}::{name}"),
                    None => name.to_string(),
                },
                at: Location {
                    path: path.to_path_buf(),
                    line: line_at(text, c.get(0).map_or(0, |m| m.start())),
                },
            }
        })
        .collect()
}

/// Every `PYBIND11_MODULE` and `TORCH_LIBRARY` of the C++ sources, one extension per module
/// name or namespace. `PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)` takes its name from the build
/// ([`attach_builds`]); until then it is named after its file.
fn registered_extensions(cxx: &[(PathBuf, String)]) -> Vec<Extension> {
    let mut by_name: BTreeMap<String, Extension> = BTreeMap::new();
    let mut keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in cxx {
        for c in PYBIND_MODULE.captures_iter(text) {
            let name = if &c[1] == "TORCH_EXTENSION_NAME" {
                format!("TORCH_EXTENSION_NAME@{}", path.display())
            } else {
                c[1].to_string()
            };
            let e = by_name
                .entry(name.clone())
                .or_insert_with(|| new_extension(&name, "pybind11"));
            e.ops.extend(defs(path, text, &c[2], None));
            e.sources.push(path.clone());
        }
        for c in TORCH_LIBRARY.captures_iter(text) {
            let name = format!("torch.ops.{}", &c[1]);
            let e = by_name
                .entry(name.clone())
                .or_insert_with(|| new_extension(&name, "torch-library"));
            e.ops.extend(defs(path, text, &c[2], Some(&c[1])));
            e.sources.push(path.clone());
        }
        for c in TORCH_LIBRARY_IMPL.captures_iter(text) {
            keys.entry(format!("torch.ops.{}", &c[1]))
                .or_default()
                .insert(c[2].to_string());
        }
    }
    for (name, k) in keys {
        if let Some(e) = by_name.get_mut(&name) {
            e.dispatch_keys = k.into_iter().collect();
        }
    }
    by_name.into_values().collect()
}

fn new_extension(name: &str, registration: &'static str) -> Extension {
    Extension {
        name: name.to_string(),
        registration,
        built_at: None,
        sources: Vec::new(),
        cuda_kernels: 0,
        dispatch_keys: Vec::new(),
        ops: Vec::new(),
    }
}

/// The byte range of the call's arguments: from after `(` at `open` to its matching `)`, over
/// the code view (strings blanked, so a bracket in a string does not count).
fn call_args(code: &str, open: usize) -> std::ops::Range<usize> {
    let b = code.as_bytes();
    let mut depth = 0usize;
    for (i, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return open + 1..i;
                }
            }
            _ => {}
        }
    }
    open + 1..b.len()
}

/// One build of an extension in a Python file: its name and the source files it names.
struct Build {
    name: String,
    at: Location,
    /// Source paths as string literals name them (relative to the build file's directory);
    /// empty when they are computed (`glob`).
    literal_sources: Vec<String>,
}

fn builds(path: &Path, text: &str, lexed: &pysrc::Lexed) -> Vec<Build> {
    let code = &lexed.code;
    if !code.contains("cpp_extension") && !code.contains("Extension") {
        return Vec::new();
    }
    let literal = |range: &std::ops::Range<usize>| -> Vec<(usize, String)> {
        lexed
            .strings
            .iter()
            .filter(|s| s.value.start >= range.start && s.value.end <= range.end)
            .map(|s| (s.value.start, text[s.value.clone()].to_string()))
            .collect()
    };
    // Names that stand for an extension class: `extension = CUDAExtension`, `... import
    // CppExtension as CE`.
    let mut callees: BTreeSet<String> = ["CUDAExtension", "CppExtension", "load", "load_inline"]
        .map(String::from)
        .into();
    for c in EXTENSION_ALIAS.captures_iter(code) {
        callees.insert(c[1].to_string());
    }
    for c in EXTENSION_IMPORT_AS.captures_iter(code) {
        callees.insert(c[1].to_string());
    }
    let mut out = Vec::new();
    for c in CALL.captures_iter(code) {
        if !callees.contains(&c[1]) {
            continue;
        }
        let call = c.get(0).expect("match");
        let args = call_args(code, call.end() - 1);
        let strings = literal(&args);
        let arg_code = &code[args.clone()];
        let is_load = matches!(&c[1], "load" | "load_inline");
        if is_load && !LOAD_SOURCES.is_match(arg_code) {
            continue; // `torch.load(...)`, `json.load(...)`: not a build
        }
        // `name="X"` or the first positional string.
        let name = match NAME_KWARG.find(arg_code) {
            Some(k) => strings
                .iter()
                .find(|(at, _)| *at > args.start + k.end())
                .map(|(_, s)| s.clone()),
            None => strings.first().map(|(_, s)| s.clone()),
        };
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            continue;
        };
        let literal_sources = strings
            .iter()
            .map(|(_, s)| s.clone())
            .filter(|s| !s.contains(['*', '?', '[']))
            .filter(|s| source_kind(Path::new(s)).is_some_and(|k| matches!(k, Source::Cxx)))
            .collect();
        out.push(Build {
            name: name.rsplit('.').next().unwrap_or(&name).to_string(),
            at: Location {
                path: path.to_path_buf(),
                line: line_at(text, call.start()),
            },
            literal_sources,
        });
    }
    out
}

/// Names the `TORCH_EXTENSION_NAME` extensions after the build that compiles their sources,
/// gives each extension its sources and counts their CUDA kernels.
fn attach_builds(
    extensions: &mut Vec<Extension>,
    python: &[(PathBuf, String, pysrc::Lexed)],
    cxx: &[(PathBuf, String)],
) {
    for (path, text, lexed) in python {
        for build in builds(path, text, lexed) {
            let dir = path.parent().unwrap_or(Path::new(""));
            let sources: Vec<PathBuf> = if build.literal_sources.is_empty() {
                // Computed sources (`glob(...)`): every C++/CUDA file under the build's directory.
                cxx.iter()
                    .map(|(p, _)| p.clone())
                    .filter(|p| p.starts_with(dir))
                    .collect()
            } else {
                build
                    .literal_sources
                    .iter()
                    .map(|s| normalise(&dir.join(s)))
                    .collect()
            };
            // The extension its sources register, else a new one with no ops found.
            let idx = extensions.iter().position(|e| {
                e.name == build.name
                    || (e.name.starts_with("TORCH_EXTENSION_NAME@")
                        && e.sources.iter().any(|s| sources.contains(s)))
            });
            let e = match idx {
                Some(i) => &mut extensions[i],
                None => {
                    extensions.push(new_extension(&build.name, "pybind11"));
                    extensions.last_mut().expect("just pushed")
                }
            };
            e.name = build.name.clone();
            e.built_at = Some(build.at.clone());
            for s in sources {
                if !e.sources.contains(&s) {
                    e.sources.push(s);
                }
            }
        }
    }
    for e in extensions.iter_mut() {
        e.sources.sort();
        e.cuda_kernels = e
            .sources
            .iter()
            .filter_map(|s| cxx.iter().find(|(p, _)| p == s))
            .map(|(_, t)| GLOBAL.find_iter(t).count())
            .sum();
        if let Some(file) = e.name.strip_prefix("TORCH_EXTENSION_NAME@") {
            // Built by nothing the project shows: named after its file.
            e.name = Path::new(file)
                .file_stem()
                .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned());
        }
    }
}

/// `a/./b/../c` → `a/c`, without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// `models/ops/functions/f.py` → `models.ops.functions.f` (a package's `__init__.py` → the
/// package).
fn module_of(path: &Path) -> String {
    let mut parts: Vec<String> = path
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "__init__") {
        parts.pop();
    }
    parts.join(".")
}

/// The `torch.autograd.Function` subclasses that call an extension's ops, with their call
/// sites and twin.
fn wrappers(extensions: &[Extension], python: &[(PathBuf, String, pysrc::Lexed)]) -> Vec<Wrapper> {
    let names: BTreeSet<&str> = extensions.iter().map(|e| e.name.as_str()).collect();
    let mut out: Vec<Wrapper> = Vec::new();
    for (path, text, lexed) in python {
        let code = &lexed.code;
        // Local names bound to an extension module.
        let mut alias: BTreeMap<String, String> = BTreeMap::new();
        for c in IMPORT_AS.captures_iter(code) {
            let module = c[1].rsplit('.').next().unwrap_or(&c[1]).to_string();
            if names.contains(module.as_str()) {
                let local = c.get(2).map_or(&c[1], |m| m.as_str()).to_string();
                alias.insert(local, module);
            }
        }
        for c in FROM_IMPORT.captures_iter(code) {
            if names.contains(&c[2]) {
                let local = c.get(3).map_or(&c[2], |m| m.as_str()).to_string();
                alias.insert(local, c[2].to_string());
            }
        }
        // `ext = load(name="X", sources=[...])`: the variable is the module.
        for build in builds(path, text, lexed) {
            let line = lexed.code_line(build.at.line - 1);
            if let Some(c) = BOUND_BUILD.captures(line) {
                alias.insert(c[1].to_string(), build.name);
            }
        }
        for class in FUNCTION_CLASS.captures_iter(code) {
            let bases = &class[3];
            if !bases
                .split(',')
                .any(|b| b.trim().rsplit('.').next() == Some("Function"))
            {
                continue;
            }
            let indent = class[1].len();
            let start = class.get(0).expect("match").start();
            let first_line = line_at(code, start);
            let end = body_end(lexed, first_line, indent);
            let body_start = lexed
                .line_starts
                .get(first_line)
                .copied()
                .unwrap_or(code.len());
            let body_end = lexed
                .line_starts
                .get(end - 1)
                .copied()
                .unwrap_or(code.len());
            let body = &code[body_start.min(body_end)..body_end];
            let mut extension = None;
            let mut calls = BTreeSet::new();
            for c in ATTR_CALL.captures_iter(body) {
                if let Some(module) = alias.get(&c[1]) {
                    extension = Some(module.clone());
                    calls.insert(c[2].to_string());
                }
            }
            for c in TORCH_OPS_CALL.captures_iter(body) {
                let ns = format!("torch.ops.{}", &c[1]);
                if names.contains(ns.as_str()) {
                    extension = Some(ns);
                    calls.insert(format!("{}::{}", &c[1], &c[2]));
                }
            }
            let Some(extension) = extension else {
                continue;
            };
            let module = module_of(path);
            out.push(Wrapper {
                class: class[2].to_string(),
                target: format!("{module}:{}", &class[2]),
                at: Location {
                    path: path.clone(),
                    line: first_line,
                },
                extension,
                calls: calls.into_iter().collect(),
                call_sites: Vec::new(),
                twin: TOP_DEF
                    .captures_iter(code)
                    .find(|d| twin_like(&d[1]))
                    .map(|d| Twin {
                        function: d[1].to_string(),
                        target: format!("{module}:{}", &d[1]),
                        at: Location {
                            path: path.clone(),
                            line: line_at(code, d.get(0).expect("match").start()),
                        },
                    }),
            });
        }
    }
    for (path, _, lexed) in python {
        for c in APPLY.captures_iter(&lexed.code) {
            if let Some(w) = out.iter_mut().find(|w| w.class == c[1]) {
                w.call_sites.push(Location {
                    path: path.clone(),
                    line: line_at(&lexed.code, c.get(0).expect("match").start()),
                });
            }
        }
    }
    out
}

/// The 1-based line after a block opened on `header` at `indent`: the first statement line
/// indented no deeper than the header (`lines + 1` at the end of the file).
fn body_end(lexed: &pysrc::Lexed, header: usize, indent: usize) -> usize {
    let n = lexed.lines.len();
    (header + 1..=n)
        .find(|&l| {
            lexed.statement(l) && {
                let line = lexed.code_line(l - 1);
                !line.trim().is_empty() && line.len() - line.trim_start().len() <= indent
            }
        })
        .unwrap_or(n + 1)
}

/// The inventory as Markdown: what a porter reads first (MIGRATION.md, the migrate report).
pub fn render_markdown(ops: &CustomOps) -> String {
    use std::fmt::Write as _;
    let cell = |s: &str| {
        s.replace('\\', "\\\\")
            .replace('|', "\\|")
            .replace('`', "'")
    };
    let at = |l: &Location| format!("`{}:{}`", cell(&l.path.display().to_string()), l.line);
    let mut out = String::new();
    if ops.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "## Custom ops\n\nC++/CUDA extensions no rule can migrate: each needs an SDAA \
         implementation, checked against a reference with `modelzoo op check`, and its wrapper \
         routed to it with `modelzoo port --op CLASS=module:function` (docs/op.md).\n"
    );
    if !ops.extensions.is_empty() {
        let _ = writeln!(
            out,
            "| extension | registered by | built at | sources | CUDA kernels | ops |\n|---|---|---|---|---|---|"
        );
        for e in &ops.extensions {
            let ops: Vec<String> = e
                .ops
                .iter()
                .map(|o| format!("`{}`", cell(&o.name)))
                .collect();
            let _ = writeln!(
                out,
                "| `{}` | {}{} | {} | {} | {} | {} |",
                cell(&e.name),
                e.registration,
                if e.dispatch_keys.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", cell(&e.dispatch_keys.join(", ")))
                },
                e.built_at
                    .as_ref()
                    .map_or_else(|| "not built here".into(), at),
                e.sources.len(),
                e.cuda_kernels,
                if ops.is_empty() {
                    "none found".into()
                } else {
                    ops.join(", ")
                }
            );
        }
        let _ = writeln!(out);
    }
    if !ops.wrappers.is_empty() {
        let _ = writeln!(
            out,
            "| wrapper (`torch.autograd.Function`) | calls | applied at | pure-PyTorch twin |\n|---|---|---|---|"
        );
        for w in &ops.wrappers {
            let sites: Vec<String> = w.call_sites.iter().map(at).collect();
            let _ = writeln!(
                out,
                "| `{}` ({}) | `{}`: {} | {} | {} |",
                cell(&w.target),
                at(&w.at),
                cell(&w.extension),
                cell(&w.calls.join(", ")),
                if sites.is_empty() {
                    "nowhere found".into()
                } else {
                    sites.join(", ")
                },
                w.twin.as_ref().map_or_else(
                    || "none found".into(),
                    |t| format!("`{}` ({})", cell(&t.target), at(&t.at))
                )
            );
        }
        let _ = writeln!(out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_blanked_and_lines_kept() {
        let s = strip_cxx_comments("a // PYBIND11_MODULE(x, m)\n/* m.def(\"y\")\n */ b \"//s\"");
        assert!(!s.contains("PYBIND11"));
        assert!(!s.contains("m.def"));
        assert_eq!(s.lines().count(), 3);
        assert!(s.contains("\"//s\""));
    }

    #[test]
    fn twin_names() {
        for n in [
            "ms_deform_attn_core_pytorch",
            "roi_align_naive",
            "nms_ref",
            "f_python",
        ] {
            assert!(twin_like(n), "{n}");
        }
        assert!(!twin_like("ms_deform_attn"));
    }

    #[test]
    fn modules_from_paths() {
        assert_eq!(module_of(Path::new("models/ops/f.py")), "models.ops.f");
        assert_eq!(module_of(Path::new("pkg/__init__.py")), "pkg");
        assert_eq!(
            normalise(Path::new("a/./b/../c.cu")),
            PathBuf::from("a/c.cu")
        );
    }
}
