//! This repository's Rust model crates: a `run_<model>` binary, `spec.yaml` and the README.

use std::fs;
use std::path::{Path, PathBuf};

use run_scripts_template::ArgSpec;
use serde::Deserialize;

use super::readme::{check_documented, check_placeholders, check_results_table, check_sections};
use super::{missing, read_bytes, read_readme, Finding, DOCUMENTED_ARGS};
use crate::markdown;

/// Rust model crate layout. Returns the model names its run binaries give.
pub(super) fn check_rust_crate(dir: &Path, out: &mut Vec<Finding>) -> Vec<String> {
    let manifest = dir.join("Cargo.toml");
    let mut model_names = Vec::new();
    if let Some(bytes) = read_bytes(&manifest, out) {
        let text = String::from_utf8_lossy(&bytes);
        // A manifest that does not parse gets that finding instead of "no run_<model> binary".
        let (bins, mut found) = match bin_targets(&text) {
            Ok(bins) => (bins, false),
            Err(e) => {
                out.push(Finding {
                    path: manifest.clone(),
                    line: None,
                    rule: "crate.run-binary",
                    message: format!(
                        "not valid TOML, so its binaries are unknown: {}",
                        e.message()
                    ),
                });
                (Vec::new(), true)
            }
        };
        for (name, path) in &bins {
            if let Some(model) = name.strip_prefix("run_") {
                model_names.push(model.to_string());
                let candidates: Vec<PathBuf> = match path {
                    Some(p) => vec![dir.join(p)],
                    None => vec![
                        dir.join("src/bin").join(format!("{name}.rs")),
                        dir.join("src/bin").join(name).join("main.rs"),
                        dir.join("src/main.rs"),
                    ],
                };
                if candidates.iter().any(|c| c.is_file()) {
                    found = true;
                } else {
                    out.push(Finding {
                        path: candidates[0].clone(),
                        line: None,
                        rule: "crate.run-binary",
                        message: format!("the source of binary `{name}` does not exist"),
                    });
                    found = true;
                }
            }
        }
        // Binaries cargo discovers without a [[bin]] section.
        if let Ok(entries) = fs::read_dir(dir.join("src/bin")) {
            for entry in entries.flatten() {
                let n = entry.file_name().to_string_lossy().into_owned();
                let stem = n.strip_suffix(".rs").unwrap_or(&n).to_string();
                if let Some(model) = stem.strip_prefix("run_") {
                    if !model_names.iter().any(|m| m == model) {
                        model_names.push(model.to_string());
                        found = true;
                    }
                }
            }
        }
        if !found {
            out.push(Finding {
                path: manifest.clone(),
                line: None,
                rule: "crate.run-binary",
                message: "no run_<model> binary: add `[[bin]] name = \"run_<model>\"` (the uniform ModelZoo command)".into(),
            });
        }
    }

    let spec_path = dir.join("spec.yaml");
    let mut merged = None;
    match read_bytes(&spec_path, out) {
        Some(bytes) => {
            let origin = spec_path.display().to_string();
            let result = std::str::from_utf8(&bytes)
                .map_err(|e| format!("not UTF-8: {e}"))
                .and_then(|t| ArgSpec::from_yaml(t, &origin).map_err(|e| e.to_string()))
                .and_then(|extras| {
                    ArgSpec::standard()
                        .merged(&extras, &origin)
                        .map_err(|e| e.to_string())
                });
            match result {
                Ok(spec) => merged = Some(spec),
                Err(message) => out.push(Finding {
                    path: spec_path.clone(),
                    line: None,
                    rule: "crate.spec",
                    message,
                }),
            }
        }
        None if !spec_path.exists() => missing(
            out,
            spec_path,
            "crate.spec",
            "spec.yaml (the model's own arguments; `args: []` when it has none)",
        ),
        None => {}
    }
    if let Some(spec) = &merged {
        if spec.get("step").is_none() {
            out.push(Finding {
                path: dir.join("spec.yaml"),
                line: None,
                rule: "args.step",
                message: "the merged argument spec has no `step` argument".into(),
            });
        }
    }

    let readme = dir.join("README.md");
    match read_readme(&readme, out) {
        Some(text) => {
            // A crate's CLI always carries the standard DDP and multi-node arguments.
            let mut wanted: Vec<&str> = DOCUMENTED_ARGS.to_vec();
            wanted.extend(["nproc_per_node", "nnode", "node_rank"]);
            let lines = markdown::scan(&text);
            check_sections(&readme, &lines, out);
            check_results_table(&readme, &lines, out);
            check_documented(&readme, &lines, &wanted, out);
            check_placeholders(&readme, &lines, out);
        }
        None if !readme.exists() => missing(
            out,
            readme,
            "layout.readme",
            "README.md (model introduction, dataset, Docker environment, start training, training results, arguments)",
        ),
        None => {}
    }
    model_names
}

/// The part of a Cargo manifest the rules read.
#[derive(Deserialize)]
struct Manifest {
    #[serde(default)]
    bin: Vec<BinTarget>,
}

/// One `[[bin]]` table; cargo needs the name, the path defaults by convention.
#[derive(Deserialize)]
struct BinTarget {
    name: Option<String>,
    path: Option<String>,
}

/// `[[bin]]` targets of a Cargo manifest: (name, path), named ones only.
fn bin_targets(manifest: &str) -> Result<Vec<(String, Option<String>)>, toml::de::Error> {
    let manifest: Manifest = toml::from_str(manifest)?;
    Ok(manifest
        .bin
        .into_iter()
        .filter_map(|b| Some((b.name?, b.path)))
        .collect())
}

/// The `[[bin]]` names of a manifest; none when it is not valid TOML.
pub(super) fn bin_names(manifest: &str) -> Vec<String> {
    bin_targets(manifest)
        .unwrap_or_default()
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_targets_reads_bin_tables_only() {
        let m = "[package]\nname = \"x\"\n[[bin]]\nname = \"run_x\"\npath = \"src/main.rs\"\n[dependencies]\nname = 1\n[[bin]]\nname=\"tool\"\n";
        assert_eq!(
            bin_targets(m).unwrap(),
            vec![
                ("run_x".to_string(), Some("src/main.rs".to_string())),
                ("tool".to_string(), None)
            ]
        );
    }

    #[test]
    fn a_manifest_that_is_not_toml_is_one_finding() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("Cargo.toml"), "[[bin]\nname = \"run_x\"\n").unwrap();
        let mut out = Vec::new();
        check_rust_crate(t.path(), &mut out);
        let manifest: Vec<&Finding> = out
            .iter()
            .filter(|f| f.path == t.path().join("Cargo.toml"))
            .collect();
        assert_eq!(manifest.len(), 1, "{out:?}");
        assert_eq!(manifest[0].rule, "crate.run-binary");
        assert!(manifest[0].message.starts_with("not valid TOML"), "{out:?}");
    }
}
