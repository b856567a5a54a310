//! The Python file transform: each line's rewrites, apex amp → torch.sdaa.amp (all or nothing
//! per file), and the `torch_sdaa` import the rewritten file needs.

use regex::Captures;

use super::{
    patterns, report_nccl_env, FileOutcome, Note, APEX_DDP_ONLY_KWARGS, TORCH_CUDA_UNSUPPORTED,
};
use crate::pysrc;

fn join(lines: &[(usize, String)]) -> String {
    lines.iter().map(|(_, l)| l.as_str()).collect()
}

pub(super) fn migrate_python(text: &str) -> FileOutcome {
    let p = patterns();
    let mut out = FileOutcome::default();
    if !p.prefilter.is_match(text) {
        out.text = text.to_string();
        return out;
    }
    let lexed = pysrc::lex(text);
    // Lines with their original 1-based numbers; rewrites may replace one line by several
    // (each entry stays one physical line, so a re-lex lines up with the entries).
    let mut lines: Vec<(usize, String)> = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect();
    let has_apex_amp = lines
        .iter()
        .any(|(no, l)| lexed.statement(*no) && p.apex_amp_any.is_match(l));
    if has_apex_amp {
        lines = migrate_apex_amp(lines, &lexed, &mut out);
    }
    if text.contains("apex") {
        // apex DDP options sit on lines the prefilter does not look at.
        for (no, line) in &lines {
            if lexed.lines.get(no - 1).is_some_and(|l| l.in_string) {
                continue;
            }
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
    let after_apex = pysrc::lex(&join(&lines));
    let module_torch = lines
        .iter()
        .enumerate()
        .any(|(i, (_, l))| after_apex.statement(i + 1) && p.module_torch.is_match(l.trim_end()));
    for (i, (no, line)) in lines.iter_mut().enumerate() {
        if !p.prefilter.is_match(line) {
            continue;
        }
        let info = after_apex.lines.get(i).copied().unwrap_or_default();
        migrate_line(line, *no, info, module_torch, &mut out);
    }
    let mut text = join(&lines);
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
    // One apex-manual note per line: a refused apex amp conversion already explains its lines.
    let mut seen = std::collections::BTreeSet::new();
    out.notes
        .retain(|n| n.rule != "apex-manual" || seen.insert(n.line));
    out.text = text;
    out
}

/// Applies the single-line rules to one line (comments and strings included: they describe the
/// code), and reports what needs a person (code only).
fn migrate_line(
    line: &mut String,
    no: usize,
    info: pysrc::LineInfo,
    module_torch: bool,
    out: &mut FileOutcome,
) {
    let p = patterns();
    let code = strip_comment(line);

    // Reports first: they look at the original spelling. Docstrings (a statement that is only a
    // string, or its continuation) are prose, not code.
    let trimmed = code.trim_start();
    let prose = info.in_string
        || (info.statement()
            && (trimmed.starts_with(['"', '\''])
                || trimmed.find(['"', '\'']).is_some_and(|q| {
                    q <= 2 && trimmed[..q].chars().all(|c| "rRbBuUfF".contains(c))
                })));
    if !prose {
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
        if p.nvml.is_match(code) {
            out.note(
                no,
                "nvidia-only",
                format!("NVML (pynvml) queries NVIDIA GPUs and has no SDAA equivalent; port by hand: {}", code.trim()),
            );
        }
        if p.nvidia_smi.is_match(code) {
            out.note(
                no,
                "nvidia-only",
                format!(
                    "nvidia-smi queries NVIDIA GPUs and has no SDAA equivalent; port by hand: {}",
                    code.trim()
                ),
            );
        }
        if p.dali.is_match(code) {
            out.note(
                no,
                "nvidia-only",
                format!("NVIDIA DALI runs its pipeline on NVIDIA GPUs only; replace it (e.g. a torch DataLoader): {}", code.trim()),
            );
        }
        report_nccl_env(code, no, out);
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
            out.rewrote("apex-ddp", 1);
        }
    }
    // `apex.parallel.DistributedDataParallel` → torch's: only where the module binds `torch`.
    let n = p.apex_ddp_attr.find_iter(line).count();
    if n > 0 && module_torch {
        *line = p
            .apex_ddp_attr
            .replace_all(line, "torch.nn.parallel.DistributedDataParallel")
            .into_owned();
        out.rewrote("apex-ddp", n);
    }
    if !prose && p.apex_any.is_match(strip_comment(line)) {
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
    // `.is_cuda`
    let n = p.is_cuda.find_iter(line).count();
    if n > 0 {
        *line = p.is_cuda.replace_all(line, ".is_sdaa").into_owned();
        out.rewrote("is-cuda", n);
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
    // `dist.Backend.NCCL` → `'tccl'`, in code only (a quote inserted into a string breaks it).
    if !info.in_string && p.backend_nccl.is_match(line) {
        let mut n = 0;
        let current = line.clone();
        let new = p.backend_nccl.replace_all(&current, |c: &Captures| {
            let m = c.get(0).expect("whole match");
            if pysrc::in_code(&current, m.start()) {
                n += 1;
                "'tccl'".to_string()
            } else {
                m.as_str().to_string()
            }
        });
        if n > 0 {
            *line = new.into_owned();
            out.rewrote("ddp-backend", n);
        }
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
            let imports: Vec<usize> = lines
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
    let imports_torch = lines
        .iter()
        .any(|(no, l)| stmt(*no) && p.module_torch.is_match(l.trim_end()));

    let mut done = AmpConversion {
        lines: Vec::with_capacity(lines.len() + 2),
        rewrites: 0,
        notes: Vec::new(),
    };
    // Indices into done.lines of GradScaler creations and uses, and (with, step) pairs.
    let mut defs: Vec<usize> = Vec::new();
    let mut uses: Vec<usize> = Vec::new();
    let mut pairs: Vec<(usize, usize, String)> = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    // Optimizers whose next `.step()` must go through the scaler: (optimizer, index of the with).
    let mut pending: Vec<(String, usize)> = Vec::new();
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
            pending.push((opt, done.lines.len()));
            done.lines.push((
                no,
                format!("{indent}scaler.scale({loss}).backward{args}{beol}"),
            ));
            removed.push(scaled);
            done.rewrites += 1;
            i += 2;
            continue;
        }
        // `opt.step()` after a converted scale_loss.
        let code = strip_comment(line).trim();
        if let Some(pos) = pending
            .iter()
            .position(|(opt, _)| code == format!("{opt}.step()"))
        {
            let (opt, with) = pending.remove(pos);
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
    if let Some((opt, _)) = pending.first() {
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
    for &u in &uses {
        if !defs.iter().any(|&d| result.dominates(d + 1, u + 1)) {
            return Err(format!(
                "the GradScaler `amp.initialize` would become is not created on every path that reaches `{}`",
                shown(u)
            ));
        }
    }
    for (with, step, opt) in &pairs {
        if !result.dominates(with + 1, step + 1) {
            return Err(format!(
                "`{opt}.step()` also runs on paths where the loss was not scaled by `amp.scale_loss`"
            ));
        }
    }
    Ok(done)
}

/// Inserts `import torch_sdaa` after the first torch import statement (after its closing
/// parenthesis or last continuation line), at that statement's indentation. An `import torch`
/// inside a docstring or a string is not a statement and is passed over.
fn insert_sdaa_import(text: &str) -> Option<String> {
    let p = patterns();
    let lexed = pysrc::lex(text);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines
        .iter()
        .enumerate()
        .position(|(i, l)| lexed.statement(i + 1) && p.torch_import.is_match(l))?;
    let indent = leading_ws(lines[start]).to_string();
    let mut end = start;
    while end + 1 < lines.len() && lexed.lines.get(end + 1).is_some_and(|l| l.continued) {
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
