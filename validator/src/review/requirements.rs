//! requirements.tree: no requirements file anywhere in the directory pins the framework or
//! installs a local wheel or path.

use super::files::read_text;
use super::Context;
use crate::finding::Finding;

/// Whether a file name is a requirements file (`requirements.txt`, `requirement.txt`,
/// `requirements_exact.txt`, `requirements-dev.txt`, ...).
pub(super) fn is_requirements(name: &str) -> bool {
    let n = name.trim().to_lowercase();
    (n.starts_with("requirement") || n.starts_with("requirments")) && n.ends_with(".txt")
}

/// The distribution a requirement line names, normalised (`Torch_SDAA>=2` → `torch-sdaa`).
pub(super) fn dist_name(spec: &str) -> String {
    let end = spec
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .unwrap_or(spec.len());
    spec[..end].to_lowercase().replace('_', "-")
}

/// A local wheel or path: `pkg @ file:///...`, `file:...`, `./x.whl`, `/abs/x.whl`, `-e /path`.
fn local_source(spec: &str) -> bool {
    let s = spec.trim();
    let target = s.split_once(" @ ").map(|(_, t)| t.trim()).unwrap_or(s);
    let target = target
        .strip_prefix("-e ")
        .or_else(|| target.strip_prefix("--editable "))
        .unwrap_or(target)
        .trim();
    target.starts_with("file:")
        || target.starts_with("./")
        || target.starts_with("../")
        || target.starts_with('/')
        || target.starts_with('~')
        || (target.ends_with(".whl") && !target.contains("://"))
}

pub(super) fn check(ctx: &Context, out: &mut Vec<Finding>) {
    for e in ctx.tree.files() {
        if !is_requirements(&e.name()) {
            continue;
        }
        let root_file = e.rel.as_os_str() == "requirements.txt";
        let path = ctx.dir.join(&e.rel);
        let Some(text) = read_text(&path) else {
            continue;
        };
        let mut framework: Vec<(usize, String)> = Vec::new();
        let mut local: Vec<(usize, String)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let spec = match line.find(" #") {
                Some(at) => &line[..at],
                None => line,
            }
            .trim();
            if spec.is_empty() || spec.starts_with('#') {
                continue;
            }
            if local_source(spec) {
                local.push((i + 1, spec.to_string()));
            }
            if spec.starts_with('-') {
                continue;
            }
            let name = dist_name(spec);
            let pinned_framework = match name.as_str() {
                "torch-sdaa" | "torch-sdaa-cpu" => true,
                // The root file's torch / paddle are requirements.no-framework's findings.
                "torch" | "paddle" | "paddlepaddle" | "paddlepaddle-gpu" => !root_file,
                _ => false,
            };
            if pinned_framework {
                framework.push((i + 1, spec.to_string()));
            }
        }
        if let Some((first, _)) = framework.first() {
            out.push(ctx.finding(
                &path,
                Some(*first),
                "requirements.tree",
                format!(
                    "installs the framework: {} — remove {}: the SDAA environment provides torch and torch_sdaa, and a pip install would replace its build (every requirements file counts, not only the root one)",
                    listed(&framework),
                    if framework.len() == 1 { "it" } else { "them" }
                ),
            ));
        }
        if let Some((first, _)) = local.first() {
            out.push(ctx.finding(
                &path,
                Some(*first),
                "requirements.tree",
                format!(
                    "installs from local paths of the author's machine: {} — nobody else has these files: list each package by name and version (or drop it), not a `pip freeze` of one machine",
                    listed(&local)
                ),
            ));
        }
    }
}

/// `line 3 `x``, up to five, then a count.
fn listed(items: &[(usize, String)]) -> String {
    let mut parts: Vec<String> = items
        .iter()
        .take(5)
        .map(|(n, s)| {
            let s: String = if s.chars().count() > 70 {
                s.chars().take(70).collect::<String>() + "…"
            } else {
                s.clone()
            };
            format!("line {n} `{s}`")
        })
        .collect();
    if items.len() > 5 {
        parts.push(format!("and {} more", items.len() - 5));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_sources_and_names() {
        assert!(local_source("torch @ file:///apps/torch-2.4.whl#sha256=x"));
        assert!(local_source("./wheels/torch_sdaa-2.1.whl"));
        assert!(local_source("-e /home/me/mmcv"));
        assert!(!local_source(
            "git+https://github.com/Tecorigin/tcap_dllogger.git"
        ));
        assert!(!local_source("https://x/y.whl"));
        assert!(!local_source("numpy==1.24"));
        assert_eq!(dist_name("Torch_SDAA>=2.0"), "torch-sdaa");
        assert!(is_requirements("requirement.txt"));
        assert!(is_requirements("requirements_exact.txt"));
        assert!(!is_requirements("requirements.md"));
    }
}
