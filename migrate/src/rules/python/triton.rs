//! Triton: the Inference Server's imports (reported: the port has no server) told apart from
//! OpenAI Triton's (GPU kernels the port reports as such).

use super::*;

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
pub(super) fn openai_triton(code: &str, statement: bool, local_triton: bool) -> bool {
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
