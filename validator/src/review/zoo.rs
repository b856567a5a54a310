//! The zoo's hygiene: zoo.misspelt-name, zoo.junk, zoo.oversized, zoo.adaptation-marker on
//! each model directory, zoo.near-duplicate over the directories `--all` found.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use super::files::read_text;
use super::Context;
use crate::finding::{DirReport, Finding};

/// GitHub refuses files over 100 MiB.
pub(crate) const MAX_FILE: u64 = 100 << 20;

/// Most zoo.junk findings per model directory; the rest are counted in one more.
const MAX_JUNK: usize = 20;

/// The standard names of a model directory's top level and of its `run_scripts/`.
const TOP_NAMES: &[&str] = &["README.md", "requirements.txt", "run_scripts"];
const RUN_SCRIPTS_NAMES: &[&str] = &["README.md", "argument.py", "formate_cmd.py", "test.sh"];

/// Damerau–Levenshtein distance (optimal string alignment), on chars.
pub(super) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// The standard name `name` is a misspelling of, if any: the same name but for case, spaces
/// around it or a missing extension, or one edit away (a letter dropped, added, changed or
/// two swapped) for names of 8 characters or more.
fn misspelling_of<'a>(name: &str, standard: &[&'a str]) -> Option<&'a str> {
    if standard.contains(&name) {
        return None;
    }
    let n = name.trim().to_lowercase();
    standard.iter().copied().find(|s| {
        let s_low = s.to_lowercase();
        let stem = s_low.rsplit_once('.').map(|(st, _)| st).unwrap_or(&s_low);
        n == s_low || n == stem || (s.len() >= 8 && distance(&n, &s_low) == 1)
    })
}

pub(super) fn check_dir(ctx: &Context, out: &mut Vec<Finding>) {
    check_names(ctx, out);
    check_junk_and_size(ctx, out);
    check_markers(ctx, out);
}

/// zoo.misspelt-name.
fn check_names(ctx: &Context, out: &mut Vec<Finding>) {
    let mut reported: Vec<PathBuf> = Vec::new();
    for e in &ctx.tree.entries {
        let name = e.name();
        let depth = e.rel.components().count();
        let parent = e
            .rel
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let here: &[&str] = if depth == 1 {
            TOP_NAMES
        } else if depth == 2 && (parent == "run_scripts" || parent.trim() == "run_script") {
            RUN_SCRIPTS_NAMES
        } else {
            &[]
        };
        let dir_of = ctx.dir.join(e.rel.parent().unwrap_or(Path::new("")));
        let wanted = misspelling_of(&name, here)
            // Only when the standard name itself is absent there: `arguments.py` beside
            // `argument.py` is another file, not a misspelling.
            .filter(|s| !dir_of.join(s).exists() || name.trim() != name);
        let message = if let Some(s) = wanted {
            Some(format!(
                "`{name}` should be named `{s}` (the ModelZoo's standard name; the PR check and readers look for exactly that) — rename it"
            ))
        } else if name.trim() != name {
            Some(format!(
                "the name `{name}` starts or ends with a space — rename it to `{}`",
                name.trim()
            ))
        } else {
            None
        };
        if let Some(message) = message {
            if reported.iter().any(|r| e.rel.starts_with(r)) {
                continue;
            }
            reported.push(e.rel.clone());
            out.push(ctx.finding(&ctx.dir.join(&e.rel), None, "zoo.misspelt-name", message));
        }
    }
}

/// What kind of junk an entry is, if it is.
fn junk_kind(e: &super::files::Entry) -> Option<&'static str> {
    let name = e.name();
    let lower = name.to_lowercase();
    if e.is_dir {
        return match lower.as_str() {
            "__pycache__" => Some("a Python bytecode cache"),
            ".ipynb_checkpoints" => Some("notebook checkpoints"),
            "work_dirs" => Some("training outputs (work_dirs/: logs, dumped configs, checkpoints)"),
            "wandb" | "mlruns" => Some("an experiment tracker's run files"),
            "checkpoints" | "ckpt" | "ckpts" | "runs" => {
                Some("run outputs (checkpoints, event files of a training run)")
            }
            // YOLO-style run directories: `runs/train2`, `models/train2`, `exp3`.
            n if ["train", "exp"].iter().any(|p| {
                n.strip_prefix(p)
                    .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
            }) =>
            {
                Some("run outputs (a numbered training run's directory)")
            }
            _ => None,
        };
    }
    if !e.is_file {
        return None;
    }
    if lower.starts_with("events.out.tfevents") {
        return Some("a TensorBoard event file");
    }
    if [".exe", ".dll", ".msi"].iter().any(|x| lower.ends_with(x)) {
        return Some("an executable");
    }
    if lower.starts_with("wget-log") || lower == "nohup.out" {
        return Some("a download or nohup log");
    }
    if lower.ends_with(".pyc") {
        return Some("Python bytecode");
    }
    if lower == ".ds_store" || lower == "thumbs.db" || lower == "desktop.ini" {
        return Some("an OS file");
    }
    if [".pth", ".pt", ".ckpt", ".pth.tar"]
        .iter()
        .any(|x| lower.ends_with(x))
    {
        return Some("a checkpoint or weights file (a run output; give a download link instead)");
    }
    if lower.ends_with(".arrow") || lower.ends_with(".tfrecord") {
        return Some("a dataset file");
    }
    if [".tar", ".tar.gz", ".tgz", ".zip", ".rar", ".7z"]
        .iter()
        .any(|x| lower.ends_with(x))
    {
        return Some("an archive (a dataset or dump)");
    }
    if name.starts_with("新建") {
        return Some("a scratch file");
    }
    None
}

/// zoo.junk and zoo.oversized.
fn check_junk_and_size(ctx: &Context, out: &mut Vec<Finding>) {
    let mut junk_dirs: Vec<&Path> = Vec::new();
    let mut junk = 0usize;
    for e in &ctx.tree.entries {
        let path = ctx.dir.join(&e.rel);
        if e.is_file && e.len > MAX_FILE {
            out.push(ctx.finding(
                &path,
                None,
                "zoo.oversized",
                format!(
                    "{:.1} MiB: over GitHub's 100 MiB file limit (the push is refused) — remove it and give a download link in the README (datasets and weights are not committed)",
                    e.len as f64 / (1 << 20) as f64
                ),
            ));
        }
        if junk_dirs.iter().any(|d| e.rel.starts_with(d)) {
            continue;
        }
        let Some(kind) = junk_kind(e) else {
            continue;
        };
        if e.is_dir {
            junk_dirs.push(&e.rel);
        }
        junk += 1;
        if junk > MAX_JUNK {
            continue;
        }
        out.push(ctx.finding(
            &path,
            None,
            "zoo.junk",
            format!(
                "{kind}{}: not part of the model — remove it from the directory (and ignore it in .gitignore)",
                if e.is_dir { " (a directory)" } else { "" }
            ),
        ));
    }
    if junk > MAX_JUNK {
        out.push(ctx.finding(
            &ctx.dir,
            None,
            "zoo.junk",
            format!(
                "and {} more junk files or directories (only the first {MAX_JUNK} are listed)",
                junk - MAX_JUNK
            ),
        ));
    }
}

/// A third-party copyright or license notice in a file's first lines: `Copyright (c) …`,
/// `Copyright 2022 …`, `licensed under the …`, an SPDX tag — not Tecorigin's own.
fn third_party_notice(head: &str) -> bool {
    static NOTICE: OnceLock<Regex> = OnceLock::new();
    let re = NOTICE.get_or_init(|| {
        Regex::new(r"(?i)copyright\s*(?:\(c\)|©|\d{4})|licensed under the|spdx-license-identifier")
            .expect("valid regex")
    });
    head.lines()
        .take(40)
        .any(|l| re.is_match(l) && !l.to_lowercase().contains("tecorigin"))
}

/// Whether a source shows adaptation to SDAA.
fn adapted(text: &str) -> Option<usize> {
    text.lines().position(|l| {
        let t = l.trim_start();
        !t.starts_with('#')
            && !t.starts_with("//")
            && (t.contains("torch_sdaa") || t.contains("sdaa") || t.contains("tcap_dllogger"))
    })
}

/// zoo.adaptation-marker.
fn check_markers(ctx: &Context, out: &mut Vec<Finding>) {
    const SOURCES: &[&str] = &[".py", ".cpp", ".cc", ".cu", ".h", ".hpp", ".c"];
    for e in ctx.tree.files() {
        let name = e.name().to_lowercase();
        let script = name.ends_with(".py") || name.ends_with(".sh");
        if !script && !SOURCES.iter().any(|x| name.ends_with(x)) {
            continue;
        }
        let path = ctx.dir.join(&e.rel);
        let Some(text) = read_text(&path) else {
            continue;
        };
        if script {
            check_shebang(ctx, &path, &text, out);
        }
        if !SOURCES.iter().any(|x| name.ends_with(x)) || !third_party_notice(&text) {
            continue;
        }
        let Some(at) = adapted(&text) else {
            continue;
        };
        if text
            .to_lowercase()
            .contains("adapted to tecorigin hardware")
        {
            continue;
        }
        let is_py = name.ends_with(".py");
        out.push(ctx.finding(
            &path,
            Some(at + 1),
            "zoo.adaptation-marker",
            format!(
                "carries a third-party copyright notice and was changed for SDAA (line {}), but has no `Adapted to tecorigin hardware` marker — add `{}` at its top (PR rules §2.1.2)",
                at + 1,
                if is_py {
                    "# Adapted to tecorigin hardware"
                } else {
                    "// Adapted to tecorigin hardware"
                }
            ),
        ));
    }
}

/// zoo.shebang: a `#!` line below the first, after nothing but comments and blank lines — a
/// license header pasted above the shebang (often cut off) leaves the script unable to run as
/// an executable.
fn check_shebang(ctx: &Context, path: &Path, text: &str, out: &mut Vec<Finding>) {
    for (i, line) in text.lines().enumerate().take(40) {
        let t = line.trim_start();
        if t.starts_with("#!") {
            if i > 0 {
                out.push(ctx.finding(
                    path,
                    Some(i + 1),
                    "zoo.shebang",
                    format!(
                        "the shebang `{}` is on line {}, below a header: it works only as the first line — move the header below it (and check the header is complete, not cut off)",
                        t.trim_end(),
                        i + 1
                    ),
                ));
            }
            return;
        }
        if !(t.is_empty() || t.starts_with('#')) {
            return;
        }
    }
}

/// zoo.near-duplicate: model directories whose names differ only in case or punctuation.
pub(super) fn near_duplicates(reports: &mut [DirReport]) {
    let key = |d: &Path| -> String {
        d.file_name()
            .map(|n| {
                n.to_string_lossy()
                    .chars()
                    .filter(|c| c.is_alphanumeric())
                    .flat_map(char::to_lowercase)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in reports.iter().enumerate() {
        if r.kind == crate::finding::ModelKind::Python
            || r.kind == crate::finding::ModelKind::RustCrate
        {
            let k = key(&r.dir);
            if !k.is_empty() {
                groups.entry(k).or_default().push(i);
            }
        }
    }
    for members in groups.values().filter(|m| m.len() > 1) {
        for &i in members {
            let others: Vec<String> = members
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| reports[j].dir.display().to_string())
                .collect();
            let dir = reports[i].dir.clone();
            reports[i].findings.push(Finding {
                path: dir,
                line: None,
                rule: "zoo.near-duplicate",
                message: format!(
                    "the same model name as {} but for case or punctuation — one model, one directory: merge them (keep one, move what the other adds) or name them apart",
                    others.join(", ")
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspellings_of_standard_names() {
        assert_eq!(misspelling_of("run_script", TOP_NAMES), Some("run_scripts"));
        assert_eq!(misspelling_of("README.MD", TOP_NAMES), Some("README.md"));
        assert_eq!(misspelling_of("readme", TOP_NAMES), Some("README.md"));
        assert_eq!(misspelling_of(" README.md", TOP_NAMES), Some("README.md"));
        assert_eq!(misspelling_of("REAMDE.md", TOP_NAMES), Some("README.md"));
        assert_eq!(
            misspelling_of("requirement.txt", TOP_NAMES),
            Some("requirements.txt")
        );
        assert_eq!(misspelling_of("README.md", TOP_NAMES), None);
        assert_eq!(misspelling_of("README_zh-CN.md", TOP_NAMES), None);
        assert_eq!(misspelling_of("Dockerfile", TOP_NAMES), None);
        assert_eq!(misspelling_of("tests.sh", RUN_SCRIPTS_NAMES), None);
        assert_eq!(distance("ab", "ba"), 1);
    }
}
