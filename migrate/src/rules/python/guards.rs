//! CUDA-only guards: statements and blocks that test for a CUDA-only library and are kept
//! (with a finding) rather than rewritten, so the CUDA-only path is skipped on SDAA.

use super::*;

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
pub(super) fn cuda_only_guards(
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
