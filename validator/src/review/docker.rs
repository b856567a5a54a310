//! docker.file: the model's Dockerfiles build what the README's environment step promises —
//! every file `COPY`/`ADD` takes from the build context exists, and the last instruction is not
//! a second `FROM` (the image built would be that bare base, without anything installed above).

use std::path::Path;

use super::files::read_text;
use super::Context;
use crate::finding::Finding;

/// Whether a file name is a Dockerfile: `Dockerfile`, `Dockerfile.sdaa`, `sdaa.dockerfile`.
fn is_dockerfile(name: &str) -> bool {
    let n = name.to_lowercase();
    n == "dockerfile" || n.starts_with("dockerfile.") || n.ends_with(".dockerfile")
}

/// The instructions of a Dockerfile: (first line, keyword upper-cased, arguments), with
/// continuation lines joined and comments dropped.
fn instructions(text: &str) -> Vec<(usize, String, Vec<String>)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('#') && pending.is_none() {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        if let Some(body) = t.strip_suffix('\\') {
            joined.push_str(body);
            joined.push(' ');
            pending = Some((start, joined));
            continue;
        }
        joined.push_str(t);
        let mut words = joined.split_whitespace();
        if let Some(k) = words.next() {
            out.push((start, k.to_uppercase(), words.map(str::to_string).collect()));
        }
    }
    if let Some((start, joined)) = pending {
        let mut words = joined.split_whitespace();
        if let Some(k) = words.next() {
            out.push((start, k.to_uppercase(), words.map(str::to_string).collect()));
        }
    }
    out
}

pub(super) fn check(ctx: &Context, out: &mut Vec<Finding>) {
    for e in ctx.tree.files() {
        if !is_dockerfile(&e.name()) {
            continue;
        }
        let path = ctx.dir.join(&e.rel);
        let Some(text) = read_text(&path) else {
            continue;
        };
        let here = path.parent().unwrap_or(&ctx.dir).to_path_buf();
        let steps = instructions(&text);
        for (line, key, args) in &steps {
            if key != "COPY" && key != "ADD" {
                continue;
            }
            // `--from=stage` copies from another image, not the context.
            if args.iter().any(|a| a.starts_with("--from")) {
                continue;
            }
            let plain: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
            if plain.len() < 2 || plain[0].starts_with('[') {
                continue;
            }
            for src in &plain[..plain.len() - 1] {
                if src.contains("://")
                    || src.contains(['$', '*', '?', '['])
                    || Path::new(src.as_str()).is_absolute()
                {
                    continue;
                }
                let rel = src.trim_start_matches("./");
                if rel.is_empty() || rel == "." {
                    continue;
                }
                if here.join(rel).exists() || ctx.dir.join(rel).exists() {
                    continue;
                }
                out.push(ctx.finding(
                    &path,
                    Some(*line),
                    "docker.file",
                    format!(
                        "`{key} {src}`: `{src}` is neither beside the Dockerfile nor in the model directory — the build stops there: add the file or fix the name"
                    ),
                ));
            }
        }
        let froms = steps.iter().filter(|(_, k, _)| k == "FROM").count();
        if let Some((line, key, args)) = steps.last() {
            if key == "FROM" && froms > 1 {
                out.push(ctx.finding(
                    &path,
                    Some(*line),
                    "docker.file",
                    format!(
                        "ends with a second `FROM {}`: the image built is that bare base, without anything the instructions above installed — remove it, or give the stage its steps",
                        args.join(" ")
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_join_continuations_and_skip_comments() {
        let text = "# c\nFROM a:1\nRUN pip install \\\n    x \\\n    y\nCOPY --chown=1 requirements.txt /w/\nFROM b\n";
        let got: Vec<(usize, String, usize)> = instructions(text)
            .into_iter()
            .map(|(l, k, a)| (l, k, a.len()))
            .collect();
        assert_eq!(
            got,
            vec![
                (2, "FROM".into(), 1),
                (3, "RUN".into(), 4),
                (6, "COPY".into(), 3),
                (7, "FROM".into(), 1)
            ]
        );
        assert!(is_dockerfile("Dockerfile") && is_dockerfile("sdaa.Dockerfile"));
        assert!(!is_dockerfile("docker_build.sh"));
    }
}
