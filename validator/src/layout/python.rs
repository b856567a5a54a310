//! The Python (Tecorigin ModelZoo) layout: README, requirements.txt and `run_scripts/`.

use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

use super::readme::{check_documented, check_model_readme, check_placeholders, contains_word};
use super::{missing, read_bytes, read_readme, readme_like, Finding, DOCUMENTED_ARGS};
use crate::markdown;

/// Python (Tecorigin ModelZoo) layout. Returns the model names its run scripts give.
pub(super) fn check_python(dir: &Path, out: &mut Vec<Finding>) -> Vec<String> {
    let readme = dir.join("README.md");
    match read_readme(&readme, out) {
        Some(text) => check_model_readme(&readme, &text, out),
        None if !readme.exists() => match readme_like(dir) {
            // A README under another name (`readme`, `README.MD`) is still the model's README:
            // its content is checked, and the name is the finding.
            Some(other) => {
                out.push(Finding {
                    path: other.clone(),
                    line: None,
                    rule: "layout.readme",
                    message: format!(
                        "the model README is named `{}`: rename it to README.md (the ModelZoo and its PR check look for that name); its content is checked below",
                        other.file_name().unwrap_or_default().to_string_lossy()
                    ),
                });
                if let Some(text) = read_readme(&other, out) {
                    check_model_readme(&other, &text, out);
                }
            }
            None => missing(
                out,
                readme,
                "layout.readme",
                "README.md (model introduction, dataset, Docker environment, start training, training results)",
            ),
        },
        None => {}
    }

    let req = dir.join("requirements.txt");
    match read_bytes(&req, out) {
        Some(bytes) => check_requirements(&req, &String::from_utf8_lossy(&bytes), out),
        None if !req.exists() => missing(
            out,
            req,
            "layout.requirements",
            "requirements.txt (the model's extra Python dependencies)",
        ),
        None => {}
    }

    let rs = dir.join("run_scripts");
    if !rs.is_dir() {
        missing(
            out,
            rs,
            "layout.run-scripts",
            "run_scripts/ with run_<model>.py, argument.py, formate_cmd.py and README.md",
        );
        return Vec::new();
    }
    let mut model_names = Vec::new();
    let mut run_scripts = Vec::new();
    match fs::read_dir(&rs) {
        Ok(entries) => {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if let Some(model) = name
                    .strip_prefix("run_")
                    .and_then(|n| n.strip_suffix(".py"))
                {
                    if !model.is_empty() {
                        model_names.push(model.to_string());
                        run_scripts.push(entry.path());
                    }
                }
            }
        }
        Err(e) => out.push(Finding {
            path: rs.clone(),
            line: None,
            rule: "fs.readable",
            message: format!("cannot list: {e}"),
        }),
    }
    model_names.sort();
    run_scripts.sort();
    if run_scripts.is_empty() {
        missing(
            out,
            rs.join("run_<model>.py"),
            "layout.run-scripts",
            "run_<model>.py (the uniform launcher, e.g. run_resnet.py)",
        );
    }
    for (file, what) in [
        (
            "argument.py",
            "argument.py (the argparse definition of every argument)",
        ),
        (
            "formate_cmd.py",
            "formate_cmd.py (formats the launch command)",
        ),
        (
            "README.md",
            "README.md (documents every run_scripts argument)",
        ),
    ] {
        if !rs.join(file).exists() {
            missing(out, rs.join(file), "layout.run-scripts", what);
        }
    }

    // Sources that define the arguments: argument.py and the run scripts.
    let argument = rs.join("argument.py");
    let argument_text =
        read_bytes(&argument, out).map(|b| String::from_utf8_lossy(&b).into_owned());
    let mut parser_text = argument_text.clone().unwrap_or_default();
    for script in &run_scripts {
        if let Some(b) = read_bytes(script, out) {
            parser_text.push('\n');
            parser_text.push_str(&String::from_utf8_lossy(&b));
        }
    }
    if argument_text.is_some() || !run_scripts.is_empty() {
        static STEP: OnceLock<Regex> = OnceLock::new();
        let step = STEP.get_or_init(|| Regex::new(r#"["']--step["']"#).expect("valid regex"));
        if !step.is_match(&parser_text) {
            out.push(Finding {
                path: if argument_text.is_some() { argument } else { rs.clone() },
                line: None,
                rule: "args.step",
                message: "the argument parser has no `--step` option: add `parser.add_argument('--step', type=int, default=-1)` for short functional runs".into(),
            });
        }
    }

    let ddp = contains_word(&parser_text, "nproc_per_node");
    let multi_node = contains_word(&parser_text, "nnode")
        || contains_word(&parser_text, "nnodes")
        || contains_word(&parser_text, "node_rank");
    let rs_readme = rs.join("README.md");
    if let Some(text) = read_readme(&rs_readme, out) {
        let lines = markdown::scan(&text);
        let mut wanted: Vec<&str> = DOCUMENTED_ARGS.to_vec();
        if ddp {
            wanted.push("nproc_per_node");
        }
        if multi_node {
            wanted.extend(["nnode", "node_rank"]);
        }
        check_documented(&rs_readme, &lines, &wanted, out);
        check_placeholders(&rs_readme, &lines, out);
    }
    model_names
}

static FRAMEWORKS: &[&str] = &["torch", "paddle", "paddlepaddle", "paddlepaddle-gpu"];

fn check_requirements(path: &Path, text: &str, out: &mut Vec<Finding>) {
    for (n, line) in text.lines().enumerate() {
        let spec = line.split('#').next().unwrap_or("").trim();
        if spec.is_empty() || spec.starts_with('-') {
            continue;
        }
        let name_end = spec
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
            .unwrap_or(spec.len());
        let name = spec[..name_end].to_lowercase().replace('_', "-");
        if FRAMEWORKS.contains(&name.as_str()) {
            out.push(Finding {
                path: path.to_path_buf(),
                line: Some(n + 1),
                rule: "requirements.no-framework",
                message: format!(
                    "`{spec}` — remove it: the SDAA environment provides {name} (a pip install would replace torch_sdaa's build)"
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_flags_frameworks_not_lookalikes() {
        let mut out = Vec::new();
        check_requirements(
            Path::new("r.txt"),
            "numpy\ntorchvision==0.15\ntorch>=2.0 # no\n# torch\npaddlepaddle-gpu\ntorch_sdaa\n",
            &mut out,
        );
        let lines: Vec<(Option<usize>, &str)> =
            out.iter().map(|f| (f.line, f.message.as_str())).collect();
        assert_eq!(out.len(), 2, "{lines:?}");
        assert_eq!(lines[0].0, Some(3), "{lines:?}");
        assert!(lines[0].1.starts_with("`torch>=2.0`"), "{lines:?}");
        assert_eq!(lines[1].0, Some(5), "{lines:?}");
    }
}
