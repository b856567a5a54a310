//! `modelzoo validate`: the ModelZoo layout rules of the adaptation guide (§3.3, §3.6, §3.7),
//! checked on a model directory without writing anything.
//!
//! Two kinds of model directory are understood:
//! - a Python model directory in the Tecorigin ModelZoo layout (`README.md`, `requirements.txt`,
//!   `run_scripts/` with `run_<model>.py`, `argument.py`, `formate_cmd.py`, `README.md`);
//! - one of this repository's Rust model crates (`Cargo.toml` declaring a `run_<model>` binary,
//!   the model's argument spec `spec.yaml`, `README.md`), the same contract in Rust.

mod index;
mod python;
mod readme;
mod rust_crate;

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use model_config::zoo_cases::{self, IndexFormat};
use python::check_python;
use rust_crate::{bin_names, check_rust_crate};

pub use crate::finding::{DirReport, Finding, ModelKind};
pub use crate::render::{location, render_json, render_junit, render_text, summarize, Summary};
use crate::rules::MAX_CHECKED_BYTES;
pub use crate::rules::{all_rules, severity_of, Rule, Severity, LAYOUT_RULES as RULES};
pub use index::ModelIndex;
pub use readme::README_SECTIONS;

/// The largest model.yaml or case file validate reads (the public ModelZoo's is a few KiB); a
/// larger one is an error, never held in memory.
pub(crate) const MAX_INDEX_BYTES: u64 = 16 << 20;

/// The arguments every run_scripts README must document (adaptation guide §3.3).
pub const DOCUMENTED_ARGS: &[&str] = &[
    "model_name",
    "batch_size",
    "epoch",
    "step",
    "dataset_path",
    "lr",
    "device",
    "autocast",
];

/// Reasons `validate` cannot run at all (exit 2), as opposed to violations (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("{path}: not a directory — give a model directory (or a tree with --all)")]
    NotADirectory { path: PathBuf },
    /// The cause is part of the message and deliberately not a `source()`: reporters that
    /// print the whole chain (`{:#}`) would otherwise repeat it.
    #[error("{path}: cannot read: {error}")]
    Io { path: PathBuf, error: io::Error },
    #[error("{path}: not a usable model.yaml: {message}")]
    ModelYaml { path: PathBuf, message: String },
    /// A file given to check that is not the ModelZoo's case file.
    #[error("{path}: not a model directory nor a ModelZoo case file: {why}")]
    NotACaseFile { path: PathBuf, why: String },
}

/// Options of a validation run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// model.yaml to check entries against; when `None`, each model directory's ancestors are
    /// searched for `model_config/model.yaml`.
    pub model_yaml: Option<PathBuf>,
}

/// Checks model directories; caches the model.yaml files it finds.
pub struct Validator {
    given_index: Option<Arc<ModelIndex>>,
    found: HashMap<PathBuf, Lookup>,
    review: bool,
}

impl Validator {
    /// A validator; a `--model-yaml` that cannot be read or parsed is an error (exit 2).
    pub fn new(options: &Options) -> Result<Validator, LayoutError> {
        let given_index = match &options.model_yaml {
            Some(p) => Some(Arc::new(ModelIndex::load(p)?)),
            None => None,
        };
        Ok(Validator {
            given_index,
            found: HashMap::new(),
            review: false,
        })
    }

    /// Also run the review's cross-file rules on every model directory and, over a tree, the
    /// zoo-wide ones ([`crate::review`]). Off by default: the layout rules alone are what the
    /// PR check (`modelzoo ci`) asks for; `modelzoo validate` turns it on.
    pub fn with_review(mut self, on: bool) -> Validator {
        self.review = on;
        self
    }

    /// Check one model directory; its kind is recognised from what it holds.
    pub fn check_dir(&mut self, dir: &Path) -> Result<DirReport, LayoutError> {
        match fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(LayoutError::NotADirectory {
                    path: dir.to_path_buf(),
                })
            }
            Err(error) => {
                return Err(LayoutError::Io {
                    path: dir.to_path_buf(),
                    error,
                })
            }
        }
        let kind = if dir.join("Cargo.toml").is_file() {
            ModelKind::RustCrate
        } else {
            ModelKind::Python
        };
        let mut findings = Vec::new();
        let model_names = match kind {
            ModelKind::RustCrate => check_rust_crate(dir, &mut findings),
            _ => check_python(dir, &mut findings),
        };
        self.check_model_yaml(dir, &model_names, &mut findings);
        let compared = if self.review {
            crate::review::check_model_dir(dir, &mut findings)
        } else {
            Vec::new()
        };
        Ok(DirReport {
            dir: dir.to_path_buf(),
            kind,
            findings,
            compared,
        })
    }

    /// Check what `path` is: a zoo root (a directory holding
    /// `PyTorch/contrib/model_config/model.yaml`: its case file), a ModelZoo case file, or a
    /// model directory.
    pub fn check_path(&mut self, path: &Path) -> Result<DirReport, LayoutError> {
        match fs::metadata(path) {
            Ok(m) if m.is_dir() => match case_file_in(path)? {
                Some(file) => self.check_cases(&file),
                None => self.check_dir(path),
            },
            Ok(m) if m.is_file() => self.check_cases(path),
            _ => self.check_dir(path),
        }
    }

    /// Check a ModelZoo case file against the `zoo-case.*` rules: one finding per violation,
    /// with its line. A file that cannot be read (a FIFO included: refused, never opened
    /// blocking) or is not in the case format is an error naming it.
    pub fn check_cases(&mut self, file: &Path) -> Result<DirReport, LayoutError> {
        let text = model_config::files::read_to_string_at_most(file, MAX_INDEX_BYTES).map_err(
            |error| LayoutError::Io {
                path: file.to_path_buf(),
                error,
            },
        )?;
        match zoo_cases::detect(&text) {
            Ok(IndexFormat::ZooCases) => {}
            Ok(IndexFormat::ModelYaml) => {
                return Err(LayoutError::NotACaseFile {
                    path: file.to_path_buf(),
                    why: "it is in this repository's model.yaml schema (`models:`); check model \
                          directories against it with `--model-yaml FILE DIR...`"
                        .into(),
                })
            }
            Err(why) => {
                return Err(LayoutError::NotACaseFile {
                    path: file.to_path_buf(),
                    why,
                })
            }
        }
        let cases = zoo_cases::ZooCases::inspect_text(&text, file);
        let mut findings: Vec<Finding> = cases
            .violations
            .iter()
            .map(|v| Finding {
                path: file.to_path_buf(),
                line: Some(v.line),
                rule: v.rule,
                message: match &v.case {
                    Some(case) => format!("case `{case}`: {}", v.message),
                    None => v.message.clone(),
                },
            })
            .collect();
        if self.review {
            crate::review::check_case_file(&cases, file, &mut findings);
        }
        Ok(DirReport {
            dir: file.to_path_buf(),
            kind: ModelKind::ZooCases,
            findings,
            compared: Vec::new(),
        })
    }

    /// Find every model directory under `root` (not descending into one once found) and check
    /// each. Walk errors (symlink loops, unreadable directories) become `fs.readable` findings.
    /// When `root` is a zoo root, its ModelZoo case file is checked first.
    pub fn check_tree(&mut self, root: &Path) -> Result<Vec<DirReport>, LayoutError> {
        match fs::metadata(root) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(LayoutError::NotADirectory {
                    path: root.to_path_buf(),
                })
            }
            Err(error) => {
                return Err(LayoutError::Io {
                    path: root.to_path_buf(),
                    error,
                })
            }
        }
        let mut reports = Vec::new();
        for file in case_files_in(root)? {
            reports.push(self.check_cases(&file)?);
        }
        let mut walk = walkdir::WalkDir::new(root)
            .follow_links(true)
            .sort_by_file_name()
            .into_iter();
        while let Some(entry) = walk.next() {
            let entry = match entry {
                Ok(e) => e,
                Err(err) => {
                    let path = err.path().unwrap_or(root).to_path_buf();
                    let message = match err.loop_ancestor() {
                        Some(ancestor) => format!(
                            "symlink loop: leads back to {}; not followed — remove or retarget the link",
                            ancestor.display()
                        ),
                        None => format!("cannot walk: {err}"),
                    };
                    reports.push(DirReport {
                        dir: path.clone(),
                        kind: ModelKind::Unwalkable,
                        findings: vec![Finding {
                            path,
                            line: None,
                            rule: "fs.readable",
                            message,
                        }],
                        compared: Vec::new(),
                    });
                    continue;
                }
            };
            if !entry.file_type().is_dir() {
                continue;
            }
            let name = entry.file_name().to_string_lossy();
            if entry.depth() > 0
                && (name.starts_with('.') || name == "target" || name == "node_modules")
            {
                walk.skip_current_dir();
                continue;
            }
            if is_model_dir(entry.path()) {
                walk.skip_current_dir();
                reports.push(self.check_dir(entry.path())?);
            }
        }
        if self.review {
            crate::review::check_zoo(&mut reports);
        }
        Ok(reports)
    }

    fn check_model_yaml(&mut self, dir: &Path, model_names: &[String], out: &mut Vec<Finding>) {
        let found = match &self.given_index {
            Some(i) => Lookup::Index(i.clone()),
            None => self.find_index(dir),
        };
        match found {
            Lookup::Index(index) if !index.has_entry(dir, model_names) => out.push(Finding {
                path: index.path.clone(),
                line: None,
                rule: "model-yaml.entry",
                message: format!(
                    "no entry for this model ({}): add one with its `name` and `path` for the PR functional check",
                    under_index_root(dir, &index.path).display()
                ),
            }),
            Lookup::Broken(path, message) => out.push(Finding {
                path,
                line: None,
                rule: "model-yaml.entry",
                message: format!("cannot use this model.yaml: {message}"),
            }),
            _ => {}
        }
    }

    /// The nearest `model_config/model.yaml` among `dir`'s ancestors, cached per ancestor.
    fn find_index(&mut self, dir: &Path) -> Lookup {
        let abs = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        for ancestor in abs.ancestors() {
            let lookup = self.found.entry(ancestor.to_path_buf()).or_insert_with(|| {
                let candidate = ancestor.join("model_config").join("model.yaml");
                // A model.yaml that is there but is not a regular file (a FIFO) is reported,
                // never skipped: skipping it would leave the model unchecked without a word.
                match fs::metadata(&candidate) {
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                        ) =>
                    {
                        return Lookup::Absent
                    }
                    Err(e) => return Lookup::Broken(candidate, format!("cannot read: {e}")),
                    Ok(m) if !m.is_file() => {
                        return Lookup::Broken(
                            candidate,
                            format!(
                                "{}: not read — replace it with the real model.yaml",
                                model_config::files::not_regular(m.file_type())
                            ),
                        )
                    }
                    Ok(_) => {}
                }
                match ModelIndex::load(&candidate) {
                    Ok(i) => Lookup::Index(Arc::new(i)),
                    Err(e) => Lookup::Broken(candidate, e.to_string()),
                }
            });
            if !matches!(lookup, Lookup::Absent) {
                return lookup.clone();
            }
        }
        Lookup::Absent
    }
}

/// `dir` relative to the root of the tree `model_yaml` indexes (the directory above the file's,
/// as the index resolves its paths), so a message names the model as the index does, not by
/// the reviewer's absolute path; `dir` as given when it is not under that root.
fn under_index_root(dir: &Path, model_yaml: &Path) -> PathBuf {
    let root = model_yaml.parent().unwrap_or(Path::new(".")).join("..");
    match (fs::canonicalize(dir), fs::canonicalize(root)) {
        (Ok(d), Ok(r)) => match d.strip_prefix(&r) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
            _ => dir.to_path_buf(),
        },
        _ => dir.to_path_buf(),
    }
}

/// The ModelZoo case file of a zoo root: `dir/PyTorch/contrib/model_config/model.yaml` when it
/// is in the case format (a model.yaml of this repository's schema there is an index, used by
/// `model-yaml.entry`, not a case file). One that cannot be read — a FIFO included, refused
/// without blocking — is an error naming it, never skipped.
fn case_file_in(dir: &Path) -> Result<Option<PathBuf>, LayoutError> {
    Ok(case_files_in(dir)?.into_iter().next())
}

/// Every ModelZoo case file of a zoo root, as [`case_file_in`]: the training one
/// (`PyTorch/contrib/…`), then TecoInference's (`TecoInference/contrib/model_config/model.yaml`).
fn case_files_in(dir: &Path) -> Result<Vec<PathBuf>, LayoutError> {
    let mut out = Vec::new();
    for file in zoo_cases::case_files_of(dir) {
        let text = model_config::files::read_to_string_at_most(&file, MAX_INDEX_BYTES).map_err(
            |error| LayoutError::Io {
                path: file.clone(),
                error,
            },
        )?;
        if zoo_cases::detect(&text) == Ok(IndexFormat::ZooCases) {
            out.push(file);
        }
    }
    Ok(out)
}

/// What an ancestor directory holds as `model_config/model.yaml`.
#[derive(Debug, Clone)]
enum Lookup {
    Absent,
    Index(Arc<ModelIndex>),
    Broken(PathBuf, String),
}

/// Whether `--all` treats this directory as a model directory: one with `run_scripts/` (or
/// the misspelt `run_script/`) or `requirements.txt`, a Rust model crate, or — in a ModelZoo
/// tree — a directory at the model level (`PyTorch/contrib|build-in/<Area>/<Model>`) holding a
/// README of any spelling or a log named for a device.
fn is_model_dir(dir: &Path) -> bool {
    if dir.join("run_scripts").is_dir()
        || dir.join("run_script").is_dir()
        || dir.join("requirements.txt").is_file()
    {
        return true;
    }
    if at_model_level(dir) && (has_readme_like(dir) || has_device_log(dir)) {
        return true;
    }
    let cargo = dir.join("Cargo.toml");
    cargo.is_file()
        && (dir.join("spec.yaml").is_file()
            || fs::read_to_string(&cargo)
                .map(|t| bin_names(&t).iter().any(|n| n.starts_with("run_")))
                .unwrap_or(false))
}

/// `PyTorch/contrib/<Area>/<Model>` or `PyTorch/build-in/<Area>/<Model>` (PaddlePaddle too).
fn at_model_level(dir: &Path) -> bool {
    let names: Vec<String> = dir
        .components()
        .rev()
        .take(4)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    names.len() == 4
        && (names[2] == "contrib" || names[2] == "build-in")
        && (names[3] == "PyTorch" || names[3] == "PaddlePaddle")
}

/// A top-level log named for a device (`rexnetCifar100Cuda.log`): the build-in models that
/// ship their logs without a README at the top are model directories too.
fn has_device_log(dir: &Path) -> bool {
    fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().any(|e| {
                crate::review::is_device_log(&e.file_name().to_string_lossy())
                    && fs::metadata(e.path()).is_ok_and(|m| m.is_file())
            })
        })
        .unwrap_or(false)
}

/// A top-level file named like a README (`README.md`, `readme`, `README.MD`, ` README.md`).
fn has_readme_like(dir: &Path) -> bool {
    readme_like(dir).is_some()
}

/// The first top-level regular file (by name) named like a README: `README.md`, `readme`,
/// `README.MD`, ` README.md`.
fn readme_like(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().trim().to_lowercase();
            (n == "readme.md" || n == "readme") && fs::metadata(e.path()).is_ok_and(|m| m.is_file())
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found.into_iter().next()
}

/// Read a file the rules need; a missing file is `None` with no finding, other errors are
/// findings. Only regular files (or symlinks to them) are opened: reading a FIFO would block
/// until something writes to it, a device may never end. At most [`MAX_CHECKED_BYTES`] are
/// read: a larger file is checked on its head and named by an `fs.size` finding, so a stray
/// gigabyte file cannot exhaust the memory of a run over a whole zoo.
fn read_bytes(path: &Path, out: &mut Vec<Finding>) -> Option<Vec<u8>> {
    match fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            out.push(Finding {
                path: path.to_path_buf(),
                line: None,
                rule: "fs.readable",
                message: format!(
                    "not a regular file ({}): skipped, not read — replace it with the real file",
                    model_config::files::kind(m.file_type())
                ),
            });
            return None;
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            out.push(Finding {
                path: path.to_path_buf(),
                line: None,
                rule: "fs.readable",
                message: format!("cannot read: {e}"),
            });
            return None;
        }
    }
    let read = model_config::files::open_regular(path).and_then(|f| {
        let mut bytes = Vec::new();
        f.take(MAX_CHECKED_BYTES + 1).read_to_end(&mut bytes)?;
        Ok(bytes)
    });
    match read {
        Ok(mut b) => {
            if b.len() as u64 > MAX_CHECKED_BYTES {
                b.truncate(MAX_CHECKED_BYTES as usize);
                // A cut in the middle of a character is not the file's encoding fault.
                let keep = match std::str::from_utf8(&b) {
                    Err(e) if e.error_len().is_none() => e.valid_up_to(),
                    _ => b.len(),
                };
                b.truncate(keep);
                out.push(Finding {
                    path: path.to_path_buf(),
                    line: None,
                    rule: "fs.size",
                    message: format!(
                        "larger than {} MiB: only the first {} MiB were checked — a source file this size is a mistake (a log or data file under the wrong name?)",
                        MAX_CHECKED_BYTES >> 20,
                        MAX_CHECKED_BYTES >> 20
                    ),
                });
            }
            Some(b)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            out.push(Finding {
                path: path.to_path_buf(),
                line: None,
                rule: "fs.readable",
                message: format!("cannot read: {e}"),
            });
            None
        }
    }
}

/// Text of a README: non-UTF-8 bytes are reported and replaced, so the other rules still run.
fn read_readme(path: &Path, out: &mut Vec<Finding>) -> Option<String> {
    let bytes = read_bytes(path, out)?;
    match String::from_utf8(bytes) {
        Ok(s) => Some(s),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            out.push(Finding {
                path: path.to_path_buf(),
                line: Some(line),
                rule: "readme.encoding",
                message: format!(
                    "not UTF-8 (first invalid byte at offset {at}, line {line}); re-save it as UTF-8 (e.g. `iconv -f GBK -t UTF-8`)"
                ),
            });
            Some(String::from_utf8_lossy(e.as_bytes()).into_owned())
        }
    }
}

fn missing(out: &mut Vec<Finding>, path: PathBuf, rule: &'static str, what: &str) {
    out.push(Finding {
        path,
        line: None,
        rule,
        message: format!("missing: {what}"),
    });
}

#[cfg(test)]
mod tests {
    use regex::Regex;

    use super::*;

    #[test]
    fn every_finding_rule_is_listed() {
        let src = [
            include_str!("mod.rs"),
            include_str!("python.rs"),
            include_str!("readme.rs"),
            include_str!("rust_crate.rs"),
        ]
        .concat();
        let src = src.as_str();
        let ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        for cap in Regex::new(r#"rule: "([a-z.\-]+)""#)
            .unwrap()
            .captures_iter(src)
        {
            assert!(ids.contains(&&cap[1]), "rule {} not in RULES", &cap[1]);
        }
        for cap in
            Regex::new(r#""(layout|crate|readme|args|requirements|model-yaml|fs)\.([a-z\-]+)",\n"#)
                .unwrap()
                .captures_iter(src)
        {
            let id = format!("{}.{}", &cap[1], &cap[2]);
            assert!(ids.contains(&id.as_str()), "rule {id} not in RULES");
        }
    }
}
