//! apex amp → torch.sdaa.amp, all or nothing per file.

use super::*;

/// apex amp → torch.sdaa.amp (see the `apex-amp` rule), all or nothing per file: when any
/// part cannot be ported safely, every apex amp line is left as it is and reported.
pub(super) fn migrate_apex_amp(
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
