//! `modelzoo validate`: the ModelZoo layout rules of the adaptation guide (§3.3, §3.6, §3.7),
//! checked on a model directory without writing anything.
//!
//! Two kinds of model directory are understood:
//! - a Python model directory in the Tecorigin ModelZoo layout (`README.md`, `requirements.txt`,
//!   `run_scripts/` with `run_<model>.py`, `argument.py`, `formate_cmd.py`, `README.md`);
//! - one of this repository's Rust model crates (`Cargo.toml` declaring a `run_<model>` binary,
//!   the model's argument spec `spec.yaml`, `README.md`), the same contract in Rust.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::markdown;
use model_config::model_yaml::ModelYaml;
use modelzoo_support::junit::{Case, Layout, Outcome, Suite};
use regex::Regex;
use run_scripts_template::ArgSpec;
use serde::Serialize;

/// One layout rule: a stable id (used in output and `--list-rules`) and what it asks for.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rule {
    pub id: &'static str,
    pub description: &'static str,
}

/// Every rule `validate` checks, in the order they are checked.
pub const RULES: &[Rule] = &[
    Rule {
        id: "layout.readme",
        description: "the model directory has a README.md",
    },
    Rule {
        id: "layout.requirements",
        description: "a Python model directory has requirements.txt",
    },
    Rule {
        id: "layout.run-scripts",
        description: "a Python model directory has run_scripts/ holding run_<model>.py, argument.py, formate_cmd.py and README.md",
    },
    Rule {
        id: "crate.run-binary",
        description: "a Rust model crate declares a run_<model> binary in Cargo.toml and its source file exists",
    },
    Rule {
        id: "crate.spec",
        description: "a Rust model crate has spec.yaml, a valid argument spec that merges with the ModelZoo standard spec",
    },
    Rule {
        id: "readme.encoding",
        description: "README files are UTF-8 text",
    },
    Rule {
        id: "readme.sections",
        description: "the model README has the sections model introduction, dataset preparation, environment (Docker) preparation, start training, training results (English or Chinese headings)",
    },
    Rule {
        id: "readme.results-table",
        description: "the model README's training results section holds a table of results (the runs' arguments and the accuracy reached)",
    },
    Rule {
        id: "readme.placeholders",
        description: "README files hold no placeholders: TODO, FIXME, TBD, 待补充, 待填写 or an unrendered {{variable}} outside code and HTML comments (a fresh `modelzoo new` scaffold is not finished)",
    },
    Rule {
        id: "args.documented",
        description: "the run_scripts README (a crate's README) has an entry (a table row's first cell, or a --name) for model_name, batch_size, epoch, step, dataset_path, lr, device, autocast, plus nproc_per_node for DDP models and nnode, node_rank for multi-node models",
    },
    Rule {
        id: "args.step",
        description: "the argument parser accepts --step (argument.py, or the crate's merged argument spec)",
    },
    Rule {
        id: "requirements.no-framework",
        description: "requirements.txt does not list torch or paddle (the SDAA environment provides them)",
    },
    Rule {
        id: "model-yaml.entry",
        description: "model.yaml (given with --model-yaml, or found as model_config/model.yaml in an ancestor directory) has an entry for the model",
    },
    Rule {
        id: "fs.readable",
        description: "every file and directory the rules look at can be read (I/O errors, symlink loops and files that are not regular files, e.g. a FIFO, are reported here; those are never opened)",
    },
];

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

/// One violation: the file (or directory) it is about, the rule, and what to do.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub path: PathBuf,
    pub rule: &'static str,
    pub message: String,
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
}

/// The result for one model directory.
#[derive(Debug, Clone, Serialize)]
pub struct DirReport {
    pub dir: PathBuf,
    pub kind: ModelKind,
    pub findings: Vec<Finding>,
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
}

/// The model names and directories a model.yaml lists (what `model-yaml.entry` needs), read
/// with `model_config`'s loader.
#[derive(Debug, Clone, Default)]
pub struct ModelIndex {
    pub path: PathBuf,
    names: Vec<String>,
    dirs: Vec<PathBuf>,
}

impl ModelIndex {
    /// Load a model.yaml with `model_config`'s loader. A file that loader rejects but that
    /// still lists entries with `name`/`path` (another zoo's schema, e.g. the public
    /// ModelZoo's) is used for its names and paths, with a warning; anything else is an error
    /// naming the file.
    pub fn load(path: &Path) -> Result<ModelIndex, LayoutError> {
        let (names, dirs): (Vec<String>, Vec<PathBuf>) = match ModelYaml::load(path) {
            Ok(yaml) => yaml
                .models
                .iter()
                .map(|m| (m.name.clone(), yaml.model_dir(m)))
                .unzip(),
            Err(typed) => match lenient_entries(path) {
                Some(entries) => {
                    tracing::warn!(
                            "{}: not in this repository's model.yaml schema ({typed}); using only its entries' names and paths",
                            path.display()
                        );
                    entries
                }
                None => {
                    return Err(LayoutError::ModelYaml {
                        path: path.to_path_buf(),
                        message: typed.to_string(),
                    })
                }
            },
        };
        Ok(ModelIndex {
            path: path.to_path_buf(),
            names: names.iter().map(|n| normalise_name(n)).collect(),
            dirs: dirs
                .into_iter()
                .map(|d| fs::canonicalize(&d).unwrap_or(d))
                .collect(),
        })
    }

    /// Whether an entry's path is this directory, or its name is the directory's or a run
    /// script's model name.
    fn has_entry(&self, dir: &Path, model_names: &[String]) -> bool {
        let abs = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if self.dirs.contains(&abs) {
            return true;
        }
        let dir_name = dir
            .file_name()
            .map(|n| normalise_name(&n.to_string_lossy()))
            .unwrap_or_default();
        std::iter::once(dir_name)
            .chain(model_names.iter().map(|n| normalise_name(n)))
            .filter(|n| !n.is_empty())
            .any(|n| self.names.contains(&n))
    }
}

/// `name` and `path` of each entry of a `models:` list (or a top-level list) in any YAML
/// shape; paths resolved like model_config's default root (the directory above the file's).
/// `None` when the file has no such entries.
fn lenient_entries(path: &Path) -> Option<(Vec<String>, Vec<PathBuf>)> {
    let text = fs::read_to_string(path).ok()?;
    // Through model_config's depth guard: this runs right after the typed loader refused the
    // file, which may be because it is nested too deep for serde_yaml to reject quickly.
    let value: serde_yaml::Value = model_config::yaml::from_str(&text).ok()?;
    let list = match &value {
        serde_yaml::Value::Sequence(seq) => seq,
        serde_yaml::Value::Mapping(map) => map.get("models")?.as_sequence()?,
        _ => return None,
    };
    let root = path.parent().unwrap_or(Path::new(".")).join("..");
    let (mut names, mut dirs) = (Vec::new(), Vec::new());
    for entry in list {
        let name = entry.get("name").and_then(|v| v.as_str());
        let p = entry.get("path").and_then(|v| v.as_str());
        if name.is_none() && p.is_none() {
            continue;
        }
        names.push(name.unwrap_or_default().to_string());
        dirs.push(p.map(|p| root.join(p)).unwrap_or_default());
    }
    (!names.is_empty()).then_some((names, dirs))
}

fn normalise_name(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
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
        })
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
        Ok(DirReport {
            dir: dir.to_path_buf(),
            kind,
            findings,
        })
    }

    /// Find every model directory under `root` (not descending into one once found) and check
    /// each. Walk errors (symlink loops, unreadable directories) become `fs.readable` findings.
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
                            rule: "fs.readable",
                            message,
                        }],
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
                rule: "model-yaml.entry",
                message: format!(
                    "no entry for this model ({}): add one with its `name` and `path` for the PR functional check",
                    dir.display()
                ),
            }),
            Lookup::Broken(path, message) => out.push(Finding {
                path,
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
                if !candidate.is_file() {
                    return Lookup::Absent;
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

/// What an ancestor directory holds as `model_config/model.yaml`.
#[derive(Debug, Clone)]
enum Lookup {
    Absent,
    Index(Arc<ModelIndex>),
    Broken(PathBuf, String),
}

/// Whether `--all` treats this directory as a model directory.
fn is_model_dir(dir: &Path) -> bool {
    if dir.join("run_scripts").is_dir() || dir.join("requirements.txt").is_file() {
        return true;
    }
    let cargo = dir.join("Cargo.toml");
    cargo.is_file()
        && (dir.join("spec.yaml").is_file()
            || fs::read_to_string(&cargo)
                .map(|t| bin_names(&t).iter().any(|n| n.starts_with("run_")))
                .unwrap_or(false))
}

/// What a non-regular file is, for the finding.
fn file_kind(t: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else {
        "not a regular file"
    }
}

/// Read a file the rules need; a missing file is `None` with no finding, other errors are
/// findings. Only regular files (or symlinks to them) are opened: reading a FIFO would block
/// until something writes to it, a device may never end.
fn read_bytes(path: &Path, out: &mut Vec<Finding>) -> Option<Vec<u8>> {
    match fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            out.push(Finding {
                path: path.to_path_buf(),
                rule: "fs.readable",
                message: format!(
                    "not a regular file ({}): skipped, not read — replace it with the real file",
                    file_kind(m.file_type())
                ),
            });
            return None;
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            out.push(Finding {
                path: path.to_path_buf(),
                rule: "fs.readable",
                message: format!("cannot read: {e}"),
            });
            return None;
        }
    }
    match fs::read(path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            out.push(Finding {
                path: path.to_path_buf(),
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
        rule,
        message: format!("missing: {what}"),
    });
}

/// Python (Tecorigin ModelZoo) layout. Returns the model names its run scripts give.
fn check_python(dir: &Path, out: &mut Vec<Finding>) -> Vec<String> {
    let readme = dir.join("README.md");
    match read_readme(&readme, out) {
        Some(text) => check_model_readme(&readme, &text, out),
        None if !readme.exists() => missing(
            out,
            readme,
            "layout.readme",
            "README.md (model introduction, dataset, Docker environment, start training, training results)",
        ),
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

/// Rust model crate layout. Returns the model names its run binaries give.
fn check_rust_crate(dir: &Path, out: &mut Vec<Finding>) -> Vec<String> {
    let manifest = dir.join("Cargo.toml");
    let mut model_names = Vec::new();
    if let Some(bytes) = read_bytes(&manifest, out) {
        let text = String::from_utf8_lossy(&bytes);
        let bins = bin_targets(&text);
        let mut found = false;
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

/// `[[bin]]` targets of a Cargo manifest: (name, path). A minimal reader of the one table we
/// need, not a TOML parser: `name = "..."` / `path = "..."` lines inside `[[bin]]` sections.
fn bin_targets(manifest: &str) -> Vec<(String, Option<String>)> {
    let mut bins: Vec<(String, Option<String>)> = Vec::new();
    let mut in_bin = false;
    let mut current: Option<(Option<String>, Option<String>)> = None;
    let flush = |current: &mut Option<(Option<String>, Option<String>)>,
                 bins: &mut Vec<(String, Option<String>)>| {
        if let Some((Some(name), path)) = current.take() {
            bins.push((name, path));
        }
    };
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            flush(&mut current, &mut bins);
            in_bin = line.replace(' ', "") == "[[bin]]";
            if in_bin {
                current = Some((None, None));
            }
            continue;
        }
        if !in_bin {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            let value = value.trim().trim_matches('"').to_string();
            if let Some(cur) = current.as_mut() {
                match key.trim() {
                    "name" => cur.0 = Some(value),
                    "path" => cur.1 = Some(value),
                    _ => {}
                }
            }
        }
    }
    flush(&mut current, &mut bins);
    bins
}

fn bin_names(manifest: &str) -> Vec<String> {
    bin_targets(manifest).into_iter().map(|(n, _)| n).collect()
}

fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let is_ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !is_ident(before) && !is_ident(after)
    })
}

/// An argument is documented by an entry for it (a table row starting with its name, or its
/// `--name`), not by the word appearing in prose ("每个训练 step 的样本数量" documents no `step`).
fn check_documented(
    readme: &Path,
    lines: &[markdown::Line],
    wanted: &[&str],
    out: &mut Vec<Finding>,
) {
    let entries = markdown::argument_entries(lines);
    let absent: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|a| !entries.iter().any(|e| e == a))
        .collect();
    if !absent.is_empty() {
        out.push(Finding {
            path: readme.to_path_buf(),
            rule: "args.documented",
            message: format!(
                "arguments not documented: {} — add a table row for each (`| --name | default | meaning |`)",
                absent.join(", ")
            ),
        });
    }
}

/// The model README's rules: its sections, a table in the results section, no placeholders.
fn check_model_readme(readme: &Path, text: &str, out: &mut Vec<Finding>) {
    let lines = markdown::scan(text);
    check_sections(readme, &lines, out);
    check_results_table(readme, &lines, out);
    check_placeholders(readme, &lines, out);
}

/// Adaptation guide §3.6 item 5: the results are given as a table (arguments and accuracy).
/// A README without a results section at all is `readme.sections`' finding, not this one.
fn check_results_table(readme: &Path, lines: &[markdown::Line], out: &mut Vec<Finding>) {
    let keys = README_SECTIONS
        .iter()
        .find(|(name, _)| *name == "training results")
        .map(|(_, keys)| *keys)
        .unwrap_or_default();
    let results: Vec<markdown::Section> = markdown::sections(lines)
        .into_iter()
        .filter(|s| {
            let title = s.title.to_lowercase();
            keys.iter().any(|k| title.contains(k))
        })
        .collect();
    let Some(first) = results.first() else {
        return;
    };
    if results
        .iter()
        .any(|s| markdown::has_table(&lines[s.body.clone()]))
    {
        return;
    }
    out.push(Finding {
        path: readme.to_path_buf(),
        rule: "readme.results-table",
        message: format!(
            "the training results section (line {}: `{} {}`) has no table: add one row per run with its arguments (cards, batch_size, epoch, AMP) and the accuracy reached on SDAA beside CUDA (adaptation guide §3.6 item 5)",
            first.line,
            "#".repeat(first.level),
            first.title
        ),
    });
}

/// Placeholders left in a README (a scaffold's `TODO`s): one finding naming their lines.
fn check_placeholders(readme: &Path, lines: &[markdown::Line], out: &mut Vec<Finding>) {
    let found = markdown::placeholders(lines);
    if found.is_empty() {
        return;
    }
    let mut words: Vec<&str> = found.iter().map(|(_, w)| w.as_str()).collect();
    words.sort();
    words.dedup();
    const SHOWN: usize = 10;
    let mut at: Vec<String> = found
        .iter()
        .take(SHOWN)
        .map(|(n, _)| n.to_string())
        .collect();
    if found.len() > SHOWN {
        at.push(format!("… ({} lines in all)", found.len()));
    }
    out.push(Finding {
        path: readme.to_path_buf(),
        rule: "readme.placeholders",
        message: format!(
            "unfinished: placeholder{} {} on line{} {} — replace each with the real content",
            if words.len() == 1 { "" } else { "s" },
            words.join(", "),
            if found.len() == 1 { "" } else { "s" },
            at.join(", ")
        ),
    });
}

/// The README sections of adaptation guide §3.6: (English name, heading keywords).
pub const README_SECTIONS: &[(&str, &[&str])] = &[
    (
        "model introduction",
        &[
            "模型概述",
            "模型介绍",
            "模型简介",
            "简介",
            "概述",
            "introduction",
            "overview",
            "model description",
        ],
    ),
    (
        "dataset preparation",
        &[
            "准备数据集",
            "数据集",
            "数据准备",
            "dataset",
            "data preparation",
        ],
    ),
    (
        "environment (Docker) preparation",
        &["构建环境", "环境准备", "环境搭建", "docker", "environment"],
    ),
    (
        "start training",
        &[
            "启动训练",
            "开始训练",
            "start training",
            "launch training",
            "run training",
            "training the model",
            "how to train",
        ],
    ),
    (
        "training results",
        &[
            "训练结果",
            "精度结果",
            "training results",
            "results",
            "accuracy",
        ],
    ),
];

/// Markdown ATX headings outside fenced code blocks and HTML comments, lower-cased, numbering
/// kept.
fn headings(lines: &[markdown::Line]) -> Vec<String> {
    markdown::sections(lines)
        .into_iter()
        .map(|s| s.title.to_lowercase())
        .collect()
}

fn check_sections(readme: &Path, lines: &[markdown::Line], out: &mut Vec<Finding>) {
    let heads = headings(lines);
    let absent: Vec<String> = README_SECTIONS
        .iter()
        .filter(|(_, keys)| !heads.iter().any(|h| keys.iter().any(|k| h.contains(k))))
        .map(|(name, keys)| format!("{name} (e.g. `## {}` or `## {}`)", keys[0], title_of(keys)))
        .collect();
    if !absent.is_empty() {
        out.push(Finding {
            path: readme.to_path_buf(),
            rule: "readme.sections",
            message: format!("missing sections: {}", absent.join("; ")),
        });
    }
}

/// The first English keyword of a section, capitalised, for the hint.
fn title_of(keys: &[&str]) -> String {
    let k = keys
        .iter()
        .find(|k| k.is_ascii())
        .copied()
        .unwrap_or(keys[0]);
    let mut c = k.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
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
                rule: "requirements.no-framework",
                message: format!(
                    "line {}: `{spec}` — remove it: the SDAA environment provides {name} (a pip install would replace torch_sdaa's build)",
                    n + 1
                ),
            });
        }
    }
}

/// Totals over a run.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub dirs: usize,
    pub clean: usize,
    pub with_violations: usize,
    pub violations: usize,
}

/// Totals for a set of reports.
pub fn summarize(reports: &[DirReport]) -> Summary {
    let with_violations = reports.iter().filter(|r| !r.findings.is_empty()).count();
    Summary {
        dirs: reports.len(),
        clean: reports.len() - with_violations,
        with_violations,
        violations: reports.iter().map(|r| r.findings.len()).sum(),
    }
}

/// `path: rule-id: message` lines, then a one-line summary.
pub fn render_text(reports: &[DirReport]) -> String {
    let mut s = String::new();
    for r in reports {
        for f in &r.findings {
            s.push_str(&format!(
                "{}: {}: {}\n",
                f.path.display(),
                f.rule,
                f.message
            ));
        }
    }
    let sum = summarize(reports);
    s.push_str(&format!(
        "checked {} model director{}: {} clean, {} with violations ({} violation{})\n",
        sum.dirs,
        if sum.dirs == 1 { "y" } else { "ies" },
        sum.clean,
        sum.with_violations,
        sum.violations,
        if sum.violations == 1 { "" } else { "s" },
    ));
    s
}

/// JSON: `{"reports": [...], "summary": {...}}`.
pub fn render_json(reports: &[DirReport]) -> String {
    #[derive(Serialize)]
    struct Out<'a> {
        reports: &'a [DirReport],
        summary: Summary,
    }
    serde_json::to_string_pretty(&Out {
        reports,
        summary: summarize(reports),
    })
    .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialise: {e}\"}}"))
        + "\n"
}

/// JUnit XML: one testsuite, a testcase per model directory, a failure per violation.
pub fn render_junit(reports: &[DirReport]) -> String {
    let cases = reports
        .iter()
        .map(|r| Case {
            classname: "modelzoo.validate".into(),
            name: r.dir.display().to_string(),
            time: None,
            outcomes: r
                .findings
                .iter()
                .map(|f| Outcome::Failure {
                    kind: Some(f.rule.to_string()),
                    message: f.message.clone(),
                    text: format!("{}: {}: {}", f.path.display(), f.rule, f.message),
                })
                .collect(),
        })
        .collect();
    Suite {
        name: "modelzoo validate".into(),
        time: None,
        cases,
    }
    .render(Layout::Bare)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_ignore_code_fences_and_hash_words() {
        let text = "# Title\n```\n# not a heading\n```\n#hashtag\n## 2.4 启动训练\n";
        assert_eq!(
            headings(&markdown::scan(text)),
            vec!["title", "2.4 启动训练"]
        );
    }

    #[test]
    fn bin_targets_reads_bin_tables_only() {
        let m = "[package]\nname = \"x\"\n[[bin]]\nname = \"run_x\"\npath = \"src/main.rs\"\n[dependencies]\nname = 1\n[[bin]]\nname=\"tool\"\n";
        assert_eq!(
            bin_targets(m),
            vec![
                ("run_x".to_string(), Some("src/main.rs".to_string())),
                ("tool".to_string(), None)
            ]
        );
    }

    #[test]
    fn requirements_flags_frameworks_not_lookalikes() {
        let mut out = Vec::new();
        check_requirements(
            Path::new("r.txt"),
            "numpy\ntorchvision==0.15\ntorch>=2.0 # no\n# torch\npaddlepaddle-gpu\ntorch_sdaa\n",
            &mut out,
        );
        let lines: Vec<&str> = out.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(out.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("line 3: `torch>=2.0`"), "{lines:?}");
        assert!(lines[1].starts_with("line 5:"), "{lines:?}");
    }

    #[test]
    fn contains_word_respects_identifier_boundaries() {
        assert!(contains_word("--step N", "step"));
        assert!(!contains_word("steps", "step"));
        assert!(!contains_word("max_step", "step"));
        assert!(contains_word("`lr`", "lr"));
    }

    #[test]
    fn every_finding_rule_is_listed() {
        let src = include_str!("layout.rs");
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
