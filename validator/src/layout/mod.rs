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
mod render;
mod rust_crate;

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use model_config::zoo_cases::{self, IndexFormat};
use python::check_python;
use rust_crate::{bin_names, check_rust_crate};

pub use index::ModelIndex;
pub use readme::README_SECTIONS;
pub use render::{location, render_json, render_junit, render_text, summarize, Summary};

/// How bad a finding is. `error`: the model cannot run as submitted, or a claim it makes is
/// false; `warning`: likely wrong, a reviewer would send it back; `info`: worth knowing, not a
/// violation. Errors and warnings are violations (exit 1); info findings alone exit 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    /// The word used in every output: `error`, `warning`, `info`.
    pub fn word(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }

    /// Whether a finding of this severity is a violation (fails the check).
    pub fn is_violation(self) -> bool {
        self != Severity::Info
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// One rule: a stable id (used in output and `--list-rules`), its severity and what it asks
/// for.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    pub description: &'static str,
}

/// Every rule `validate` checks, in the order they are checked.
pub const RULES: &[Rule] = &[
    Rule {
        id: "layout.readme",
        severity: Severity::Error,
        description: "the model directory has a README.md",
    },
    Rule {
        id: "layout.requirements",
        severity: Severity::Error,
        description: "a Python model directory has requirements.txt",
    },
    Rule {
        id: "layout.run-scripts",
        severity: Severity::Error,
        description: "a Python model directory has run_scripts/ holding run_<model>.py, argument.py, formate_cmd.py and README.md",
    },
    Rule {
        id: "crate.run-binary",
        severity: Severity::Error,
        description: "a Rust model crate declares a run_<model> binary in Cargo.toml and its source file exists",
    },
    Rule {
        id: "crate.spec",
        severity: Severity::Error,
        description: "a Rust model crate has spec.yaml, a valid argument spec that merges with the ModelZoo standard spec",
    },
    Rule {
        id: "readme.encoding",
        severity: Severity::Warning,
        description: "README files are UTF-8 text",
    },
    Rule {
        id: "readme.sections",
        severity: Severity::Warning,
        description: "the model README has the sections model introduction, dataset preparation, environment (Docker) preparation, start training, training results (English or Chinese headings)",
    },
    Rule {
        id: "readme.results-table",
        severity: Severity::Warning,
        description: "the model README's training results section holds a table of results (the runs' arguments and the accuracy reached)",
    },
    Rule {
        id: "readme.placeholders",
        severity: Severity::Warning,
        description: "README files hold no placeholders: TODO, FIXME, TBD, 待补充, 待填写 or an unrendered {{variable}} outside code and HTML comments (a fresh `modelzoo new` scaffold is not finished)",
    },
    Rule {
        id: "args.documented",
        severity: Severity::Warning,
        description: "the run_scripts README (a crate's README) has an entry (a table row's first cell, or a --name) for model_name, batch_size, epoch, step, dataset_path, lr, device, autocast, plus nproc_per_node for DDP models and nnode, node_rank for multi-node models",
    },
    Rule {
        id: "args.step",
        severity: Severity::Error,
        description: "the argument parser accepts --step (argument.py, or the crate's merged argument spec)",
    },
    Rule {
        id: "requirements.no-framework",
        severity: Severity::Error,
        description: "requirements.txt does not list torch or paddle (the SDAA environment provides them)",
    },
    Rule {
        id: "model-yaml.entry",
        severity: Severity::Error,
        description: "model.yaml (given with --model-yaml, or found as model_config/model.yaml in an ancestor directory) has an entry for the model",
    },
    Rule {
        id: "fs.readable",
        severity: Severity::Error,
        description: "every file and directory the rules look at can be read (I/O errors, symlink loops and files that are not regular files, e.g. a FIFO, are reported here; those are never opened)",
    },
    Rule {
        id: "fs.size",
        severity: Severity::Warning,
        description: "a README, requirements.txt, spec or script the rules read is at most 4 MiB (larger is not a source file: only its first 4 MiB are checked, so memory stays bounded)",
    },
];

/// The most of one file the layout rules read: validate's memory stays bounded whatever a
/// file's size (a 2 GB README used to be held twice).
pub(crate) const MAX_CHECKED_BYTES: u64 = 4 << 20;

/// The largest model.yaml or case file validate reads (the public ModelZoo's is a few KiB); a
/// larger one is an error, never held in memory.
pub(crate) const MAX_INDEX_BYTES: u64 = 16 << 20;

/// Every rule `validate` reports: [`RULES`] (model directories), the ModelZoo case file's
/// (`zoo-case.*`, defined with its parser in `model_config::zoo_cases`; all errors), then the
/// review's cross-file and zoo-wide rules ([`crate::review::RULES`]).
pub fn all_rules() -> impl Iterator<Item = Rule> {
    RULES
        .iter()
        .copied()
        .chain(
            model_config::zoo_cases::RULES
                .iter()
                .map(|&(id, description)| Rule {
                    id,
                    severity: Severity::Error,
                    description,
                }),
        )
        .chain(crate::review::RULES.iter().copied())
}

/// The severity of a rule id (an id no rule has is an error).
pub fn severity_of(rule: &str) -> Severity {
    all_rules()
        .find(|r| r.id == rule)
        .map(|r| r.severity)
        .unwrap_or(Severity::Error)
}

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

/// One finding: the file (or directory) it is about, the line when it is about one, the
/// rule (whose severity it has), and what to do.
#[derive(Debug, Clone)]
pub struct Finding {
    pub path: PathBuf,
    /// 1-based line in `path`; left out of the JSON when there is none.
    pub line: Option<usize>,
    pub rule: &'static str,
    pub message: String,
}

impl Finding {
    /// The rule's severity.
    pub fn severity(&self) -> Severity {
        severity_of(self.rule)
    }
}

impl Serialize for Finding {
    /// `{"path", "line"?, "rule", "severity", "message"}`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Finding", 5)?;
        st.serialize_field("path", &self.path)?;
        match self.line {
            Some(line) => st.serialize_field("line", &line)?,
            None => st.skip_field("line")?,
        }
        st.serialize_field("rule", self.rule)?;
        st.serialize_field("severity", &self.severity())?;
        st.serialize_field("message", &self.message)?;
        st.end()
    }
}

/// What kind of model directory was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// Tecorigin ModelZoo layout with `run_scripts/`.
    Python,
    /// A Rust model crate of this repository.
    RustCrate,
    /// Not a model directory: a path `--all` could not walk (it carries `fs.readable` findings).
    Unwalkable,
    /// The public ModelZoo's case file (`PyTorch/contrib/model_config/model.yaml`), checked
    /// against the `zoo-case.*` rules.
    ZooCases,
}

/// The result for one model directory.
#[derive(Debug, Clone, Serialize)]
pub struct DirReport {
    pub dir: PathBuf,
    pub kind: ModelKind,
    pub findings: Vec<Finding>,
    /// The CUDA/SDAA log pairs (or combined loss files) the review compared, with the
    /// ModelZoo rule's figures on each; left out of the JSON when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub compared: Vec<crate::review::LossPair>,
}

impl DirReport {
    /// The worst severity among its findings, if any.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(Finding::severity).min()
    }

    /// Whether it has a violation (an error or a warning).
    pub fn has_violations(&self) -> bool {
        self.findings.iter().any(|f| f.severity().is_violation())
    }
}

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
        let findings = cases
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
        if let Some(file) = case_file_in(root)? {
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
                    dir.display()
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

/// The ModelZoo case file of a zoo root: `dir/PyTorch/contrib/model_config/model.yaml` when it
/// is in the case format (a model.yaml of this repository's schema there is an index, used by
/// `model-yaml.entry`, not a case file). One that cannot be read — a FIFO included, refused
/// without blocking — is an error naming it, never skipped.
fn case_file_in(dir: &Path) -> Result<Option<PathBuf>, LayoutError> {
    let Some(file) = zoo_cases::case_file_of(dir) else {
        return Ok(None);
    };
    let text =
        model_config::files::read_to_string_at_most(&file, MAX_INDEX_BYTES).map_err(|error| {
            LayoutError::Io {
                path: file.clone(),
                error,
            }
        })?;
    Ok((zoo_cases::detect(&text) == Ok(IndexFormat::ZooCases)).then_some(file))
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
/// README of any spelling.
fn is_model_dir(dir: &Path) -> bool {
    if dir.join("run_scripts").is_dir()
        || dir.join("run_script").is_dir()
        || dir.join("requirements.txt").is_file()
    {
        return true;
    }
    if at_model_level(dir) && has_readme_like(dir) {
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

/// A top-level file named like a README (`README.md`, `readme`, `README.MD`, ` README.md`).
fn has_readme_like(dir: &Path) -> bool {
    fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().trim().to_lowercase();
                (n == "readme.md" || n == "readme") && e.path().is_file()
            })
        })
        .unwrap_or(false)
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
