//! The public Tecorigin ModelZoo's own PR-check file, `<zoo>/PyTorch/contrib/model_config/model.yaml`:
//! a list of cases, each run by the ModelZoo's functional check as
//! `cd <run_dir> && python <run_file> --nnodes … --device sdaa --<other> <value>`.
//!
//! ```yaml
//! - case_name: octocat                      # the contributor's account name
//!   desc:
//!     run_dir: PyTorch/contrib/Classification/Demo   # from the zoo root; PyTorch/ or PaddlePaddle/
//!     run_file: run_scripts/run_demo.py              # under run_dir; run_scripts/
//!   params:                                 # all ten required, none empty
//!     nnodes: 1
//!     nproc_per_node: 4
//!     batch_size: 32
//!     model_name: resnet50
//!     dataset_path: /data/datasets/imagenet
//!     step: 100
//!     epoch: 1
//!     lr: 0.1
//!     device: sdaa
//!     autocast: True
//!     others: {warmup: 5}                   # the model's own flags, passed as --warmup 5
//! ```
//!
//! This repository's own model.yaml (a mapping with `models:`, [`crate::model_yaml`]) is a
//! different schema; [`detect`] tells the two apart by their shape. [`ZooCases::inspect`]
//! checks every rule and collects what is wrong (each with its line, the rule id and what to
//! do), so `modelzoo validate` reports all of it at once; [`ZooCases::load`] refuses a file
//! with any violation, for `modelzoo ci`.

use std::collections::HashMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Deserializer};
use serde_yaml::Value;

/// Where the file lives in a ModelZoo checkout, relative to the zoo root.
pub const FILE_IN_ZOO: &str = "PyTorch/contrib/model_config/model.yaml";

/// The keys of a case.
pub const CASE_KEYS: &[&str] = &["case_name", "desc", "params"];

/// The keys of `desc`.
pub const DESC_KEYS: &[&str] = &["run_dir", "run_file"];

/// The parameters every case must give, none empty, in the order they are passed.
pub const REQUIRED_PARAMS: &[&str] = &[
    "nnodes",
    "nproc_per_node",
    "batch_size",
    "model_name",
    "dataset_path",
    "step",
    "epoch",
    "lr",
    "device",
    "autocast",
];

/// How `desc.run_dir` may begin: the framework directories of the zoo root.
pub const RUN_DIR_PREFIXES: &[&str] = &["PyTorch/", "PaddlePaddle/"];

/// How `desc.run_file` must begin.
pub const RUN_FILE_PREFIX: &str = "run_scripts/";

/// Every rule a case file is checked against: `(id, what it asks for)`. The ids are the
/// finding ids `modelzoo validate` reports.
pub const RULES: &[(&str, &str)] = &[
    (
        "zoo-case.format",
        "a ModelZoo case file is valid YAML (a syntax error, duplicate key, alias expansion or integer out of range is named with its line and column) and a list of cases, each a mapping of case_name, desc (run_dir, run_file) and params (the ten parameters and others); unknown keys and wrong types are named with the keys valid there",
    ),
    (
        "zoo-case.required",
        "every case gives case_name, desc.run_dir, desc.run_file and params nnodes, nproc_per_node, batch_size, model_name, dataset_path, step, epoch, lr, device, autocast, none of them empty",
    ),
    (
        "zoo-case.case-name",
        "case_name is unique in the file and a plain name (letters, digits, `.`, `_`, `-`)",
    ),
    (
        "zoo-case.run-dir",
        "desc.run_dir starts with PyTorch/ or PaddlePaddle/, stays inside the zoo root (symbolic links resolved) and is a directory there",
    ),
    (
        "zoo-case.run-file",
        "desc.run_file starts with run_scripts/, stays inside run_dir (symbolic links resolved) and is a file there",
    ),
    (
        "zoo-case.params",
        "nnodes and nproc_per_node are positive integers, autocast is True or False, device is cpu, cuda or sdaa",
    ),
    (
        "zoo-case.others",
        "params.others is a mapping of flag names to single, non-empty values, none of them one of the ten standard parameters",
    ),
    (
        "zoo-case.root",
        "the zoo root (the directory holding PyTorch/ or PaddlePaddle/) is found above the case file, so run_dir can be resolved",
    ),
];

/// Which model.yaml schema a text is in, told by its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexFormat {
    /// This repository's: a mapping with `models:` ([`crate::ModelYaml`]); also an empty file.
    ModelYaml,
    /// The public ModelZoo's: a list of mappings with `case_name` ([`ZooCases`]).
    ZooCases,
}

/// The schema of model.yaml `text`: a top-level list whose items are mappings, one of them
/// with `case_name`, is the ModelZoo's case list; a mapping (or an empty document) is ours.
/// `Err` says what the document is instead. Text that is not valid YAML (a syntax error, a
/// duplicate key, an alias bomb, nesting past the limit) is told by how it begins: a block
/// list (`- `) or a flow list (`[`) is a case file, anything else ours — so the loader of the
/// schema the author meant reports the YAML error with its line and column
/// ([`yaml_error`]), instead of the other schema's complaint about the shape.
pub fn detect(text: &str) -> Result<IndexFormat, String> {
    let value: Value = match crate::yaml::from_str(text) {
        Ok(v) => v,
        Err(_) if looks_like_a_list(text) => return Ok(IndexFormat::ZooCases),
        Err(_) => return Ok(IndexFormat::ModelYaml),
    };
    match value {
        Value::Null | Value::Mapping(_) => Ok(IndexFormat::ModelYaml),
        Value::Sequence(items) => {
            let is_case = |v: &Value| v.as_mapping().is_some_and(|m| m.contains_key("case_name"));
            if items.iter().any(is_case) {
                Ok(IndexFormat::ZooCases)
            } else {
                Err(format!(
                    "a list of {} item(s), none with `case_name`: neither this repository's model.yaml \
                     (a mapping with `models:`) nor the ModelZoo's case list (`- case_name: ...`); \
                     see docs/model-yaml.md",
                    items.len()
                ))
            }
        }
        _ => Err(
            "a single value: neither this repository's model.yaml (a mapping with `models:`) nor \
             the ModelZoo's case list (`- case_name: ...`); see docs/model-yaml.md"
                .into(),
        ),
    }
}

/// Whether the first significant line of `text` (not blank, not a comment, not a directive or
/// document marker) opens a list: `- item`, a lone `-`, or `[`.
fn looks_like_a_list(text: &str) -> bool {
    text.lines()
        .map(str::trim_start)
        .find(|t| {
            !(t.is_empty()
                || t.starts_with('#')
                || t.starts_with('%')
                || t.trim_end() == "---"
                || t.trim_end() == "...")
        })
        .is_some_and(|t| {
            t == "-" || t.starts_with("- ") || t.starts_with("-\t") || t.starts_with('[')
        })
}

/// What is wrong with `text` as YAML, when it is not valid YAML: `not valid YAML (line L,
/// column C): message` — the syntax error, duplicate key, alias expansion past the limit or
/// nesting past the limit, where libyaml/serde_yaml found it. `None` for valid YAML.
pub fn yaml_error(text: &str) -> Option<String> {
    let e = crate::yaml::from_str::<Value>(text).err()?;
    let at = match (e.line(), e.column()) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        (Some(l), None) => format!(" (line {l})"),
        _ => String::new(),
    };
    Some(format!(
        "not valid YAML{at}: {} — fix the YAML; nothing of the file is used until it parses",
        e.message()
    ))
}

/// A parameter value as the ModelZoo's check passes it on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Scalar {
    /// The argument text: YAML booleans as Python prints them (`True`, `False`), numbers as
    /// written, strings verbatim.
    pub text: String,
    pub kind: ScalarKind,
}

/// What a [`Scalar`] was in the YAML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    String,
    Integer,
    Float,
    Bool,
}

/// One well-formed case.
#[derive(Debug, Clone, PartialEq)]
pub struct ZooCase {
    pub case_name: String,
    /// The line its list item begins on (1-based).
    pub line: usize,
    /// The model directory, relative to the zoo root.
    pub run_dir: String,
    /// The script, relative to `run_dir`.
    pub run_file: String,
    /// The ten standard parameters, in [`REQUIRED_PARAMS`] order.
    pub params: Vec<(String, Scalar)>,
    /// `params.others`, in file order.
    pub others: Vec<(String, Scalar)>,
}

impl ZooCase {
    /// The standard parameter `name`.
    pub fn param(&self, name: &str) -> Option<&Scalar> {
        self.params.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// The arguments after the interpreter, as the ModelZoo's check builds them:
    /// `<run_file> --nnodes N … --device <device> --autocast … --<other> <value>`. `device`
    /// replaces the case's own (the check runs every case on the device it tests).
    pub fn args(&self, device: &str) -> Vec<String> {
        let mut args = vec![self.run_file.clone()];
        for (name, value) in &self.params {
            args.push(format!("--{name}"));
            args.push(if name == "device" {
                device.to_string()
            } else {
                value.text.clone()
            });
        }
        for (name, value) in &self.others {
            args.push(format!("--{name}"));
            args.push(value.text.clone());
        }
        args
    }
}

/// One broken rule: where, which rule, and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// 1-based line in the file.
    pub line: usize,
    /// The rule id ([`RULES`]).
    pub rule: &'static str,
    /// The case it is about, when known.
    pub case: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.case {
            Some(case) => write!(f, "{}: case `{case}`: {}", self.rule, self.message),
            None => write!(f, "{}: {}", self.rule, self.message),
        }
    }
}

/// A read ModelZoo case file: the cases that are well formed, and every violation found.
#[derive(Debug, Clone)]
pub struct ZooCases {
    /// The file it was read from.
    pub file: PathBuf,
    /// The zoo root `run_dir`s are relative to: the nearest directory above the file holding
    /// `PyTorch/` or `PaddlePaddle/`; `None` when there is none (a `zoo-case.root` violation).
    pub root: Option<PathBuf>,
    pub cases: Vec<ZooCase>,
    /// Every rule the file breaks, in file order. Cases with a violation of their own are not
    /// in `cases`.
    pub violations: Vec<Violation>,
}

/// Why a case file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ZooCasesError {
    #[error("cannot read {}: {error}", path.display())]
    Read {
        path: PathBuf,
        /// Included in the message (not chained, so it is printed once).
        error: std::io::Error,
    },
    #[error(
        "{}: not a usable ModelZoo case file ({} problem{}; docs/model-yaml.md):\n{}",
        path.display(),
        violations.len(),
        if violations.len() == 1 { "" } else { "s" },
        violations.iter().map(|v| format!("  {}:{}: {v}", path.display(), v.line)).collect::<Vec<_>>().join("\n")
    )]
    Invalid {
        path: PathBuf,
        violations: Vec<Violation>,
    },
}

impl ZooCases {
    /// Reads the file and checks every rule; `Err` only when it cannot be read (a FIFO or
    /// another non-regular file included, never opened blocking).
    pub fn inspect(path: &Path) -> Result<ZooCases, ZooCasesError> {
        let text = crate::files::read_to_string(path).map_err(|error| ZooCasesError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Ok(ZooCases::inspect_text(&text, path))
    }

    /// [`ZooCases::inspect`] of text already read; `path` locates the zoo root and is named
    /// in messages.
    pub fn inspect_text(text: &str, path: &Path) -> ZooCases {
        let root = zoo_root(path);
        let mut out = ZooCases {
            file: path.to_path_buf(),
            root: root.clone(),
            cases: Vec::new(),
            violations: Vec::new(),
        };
        if root.is_none() {
            out.violations.push(Violation {
                line: 1,
                rule: "zoo-case.root",
                case: None,
                message: format!(
                    "no directory above {} holds PyTorch/ or PaddlePaddle/, so run_dir cannot be \
                     resolved: keep the file at <zoo root>/{FILE_IN_ZOO}",
                    path.display()
                ),
            });
        }
        let value: Value = match crate::yaml::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                out.violations.push(Violation {
                    line: e.line().unwrap_or(1),
                    rule: "zoo-case.format",
                    case: None,
                    message: yaml_error(text).unwrap_or_else(|| e.message()),
                });
                return out;
            }
        };
        let Value::Sequence(items) = value else {
            out.violations.push(Violation {
                line: 1,
                rule: "zoo-case.format",
                case: None,
                message: "the file must be a list of cases (`- case_name: ...`, each with desc and params)"
                    .into(),
            });
            return out;
        };
        let lines = Locator::new(text);
        let mut starts = lines.items();
        if starts.len() != items.len() {
            // Flow style (`[{case_name: a, ...}, ...]`): each item from its `case_name`.
            starts = lines.flow_items();
        }
        let by_line = starts.len() == items.len();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, item) in items.iter().enumerate() {
            // The item's lines: from its first line to the next item's (an item sharing its
            // line with the next gets that one line). When the items cannot be told apart by
            // line, the list's first line only: searching the whole file for every item made
            // large flow-style files quadratic (issue #38 C11).
            let (start, end) = match (starts.get(i), starts.get(i + 1)) {
                (Some(&s), Some(&e)) if by_line => (s, e.max(s + 1)),
                (Some(&s), None) if by_line => (s, lines.len()),
                _ => {
                    let first = lines.first_significant().unwrap_or(0);
                    (first, (first + 1).min(lines.len()))
                }
            };
            let mut check = CaseCheck {
                lines: &lines,
                start,
                end,
                index: i,
                name: None,
                violations: Vec::new(),
            };
            if let Some(case) = check.case(item, root.as_deref(), &mut seen) {
                if check.violations.is_empty() {
                    out.cases.push(case);
                }
            }
            out.violations.extend(check.violations);
        }
        out.violations.sort_by_key(|v| v.line);
        out
    }

    /// Reads the file for running it: every rule must hold, otherwise `Err` lists every
    /// violation with its line.
    pub fn load(path: &Path) -> Result<ZooCases, ZooCasesError> {
        ZooCases::inspect(path)?.into_valid()
    }

    /// `self` when it breaks no rule, else the error listing every violation.
    pub fn into_valid(self) -> Result<ZooCases, ZooCasesError> {
        if self.violations.is_empty() {
            Ok(self)
        } else {
            Err(ZooCasesError::Invalid {
                path: self.file,
                violations: self.violations,
            })
        }
    }

    /// The case named `name`.
    pub fn get(&self, name: &str) -> Option<&ZooCase> {
        self.cases.iter().find(|c| c.case_name == name)
    }

    /// The directory a case runs in: `<zoo root>/<run_dir>` (the run_dir as given when the
    /// root is unknown).
    pub fn run_dir(&self, case: &ZooCase) -> PathBuf {
        match &self.root {
            Some(root) => root.join(&case.run_dir),
            None => PathBuf::from(&case.run_dir),
        }
    }
}

/// The zoo root of a case file: the nearest directory at or above the file's own that holds
/// `PyTorch/` or `PaddlePaddle/` (for `<zoo>/PyTorch/contrib/model_config/model.yaml`,
/// `<zoo>`).
pub fn zoo_root(file: &Path) -> Option<PathBuf> {
    let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let dir = file.parent()?;
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .find(|a| {
            RUN_DIR_PREFIXES
                .iter()
                .any(|p| a.join(p.trim_end_matches('/')).is_dir())
        })
        .map(Path::to_path_buf)
}

/// The case file of a zoo root, when `dir` is one: `dir/PyTorch/contrib/model_config/model.yaml`
/// exists (whatever it is: a FIFO there is reported, not skipped).
pub fn case_file_of(dir: &Path) -> Option<PathBuf> {
    let file = dir.join(FILE_IN_ZOO);
    std::fs::symlink_metadata(&file).is_ok().then_some(file)
}

/// A key that is there (even with an empty value) or not: serde's `Option` cannot tell a
/// missing key from `key:` with nothing after it, and the rules word the two differently.
#[derive(Debug, Default)]
enum Field {
    #[default]
    Missing,
    Given(Value),
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Field, D::Error> {
        Value::deserialize(d).map(Field::Given)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    #[serde(default)]
    case_name: Field,
    #[serde(default)]
    desc: Option<RawDesc>,
    #[serde(default)]
    params: Option<RawParams>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDesc {
    #[serde(default)]
    run_dir: Field,
    #[serde(default)]
    run_file: Field,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParams {
    #[serde(default)]
    nnodes: Field,
    #[serde(default)]
    nproc_per_node: Field,
    #[serde(default)]
    batch_size: Field,
    #[serde(default)]
    model_name: Field,
    #[serde(default)]
    dataset_path: Field,
    #[serde(default)]
    step: Field,
    #[serde(default)]
    epoch: Field,
    #[serde(default)]
    lr: Field,
    #[serde(default)]
    device: Field,
    #[serde(default)]
    autocast: Field,
    #[serde(default)]
    others: Field,
}

impl RawParams {
    fn get(&self, name: &str) -> &Field {
        match name {
            "nnodes" => &self.nnodes,
            "nproc_per_node" => &self.nproc_per_node,
            "batch_size" => &self.batch_size,
            "model_name" => &self.model_name,
            "dataset_path" => &self.dataset_path,
            "step" => &self.step,
            "epoch" => &self.epoch,
            "lr" => &self.lr,
            "device" => &self.device,
            "autocast" => &self.autocast,
            _ => &self.others,
        }
    }
}

/// A value as a single argument: `Ok(None)` when empty (null or blank), `Err` with what it is
/// when it is a list or a mapping.
fn scalar(value: &Value) -> Result<Option<Scalar>, &'static str> {
    match value {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(Scalar {
            text: if *b { "True" } else { "False" }.into(),
            kind: ScalarKind::Bool,
        })),
        Value::Number(n) => Ok(Some(Scalar {
            text: n.to_string(),
            kind: if n.is_f64() {
                ScalarKind::Float
            } else {
                ScalarKind::Integer
            },
        })),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => Ok(Some(Scalar {
            text: s.clone(),
            kind: ScalarKind::String,
        })),
        Value::Sequence(_) => Err("a list"),
        Value::Mapping(_) => Err("a mapping"),
        Value::Tagged(_) => Err("a tagged value"),
    }
}

/// The checks of one case, collecting its violations.
struct CaseCheck<'a> {
    lines: &'a Locator<'a>,
    start: usize,
    end: usize,
    index: usize,
    name: Option<String>,
    violations: Vec<Violation>,
}

impl CaseCheck<'_> {
    fn line(&self, path: &[&str]) -> usize {
        self.lines.find(self.start, self.end, path)
    }

    fn fail(&mut self, path: &[&str], rule: &'static str, message: String) {
        let line = self.line(path);
        self.violations.push(Violation {
            line,
            rule,
            case: Some(
                self.name
                    .clone()
                    .unwrap_or_else(|| format!("#{}", self.index + 1)),
            ),
            message,
        });
    }

    /// A required value: present, a single value, not empty.
    fn required(&mut self, path: &[&str], field: &Field) -> Option<Scalar> {
        let key = path.join(".");
        match field {
            Field::Missing => {
                self.fail(
                    &path[..path.len() - 1],
                    "zoo-case.required",
                    format!(
                        "`{key}` is missing; add it (every case needs it, see docs/model-yaml.md)"
                    ),
                );
                None
            }
            Field::Given(value) => match scalar(value) {
                Ok(Some(s)) => Some(s),
                Ok(None) => {
                    self.fail(
                        path,
                        "zoo-case.required",
                        format!("`{key}` is empty; give it a value (the ModelZoo check refuses empty values)"),
                    );
                    None
                }
                Err(what) => {
                    self.fail(
                        path,
                        "zoo-case.format",
                        format!("`{key}` is {what}; give a single value"),
                    );
                    None
                }
            },
        }
    }

    fn case(
        &mut self,
        item: &Value,
        root: Option<&Path>,
        seen: &mut HashMap<String, usize>,
    ) -> Option<ZooCase> {
        // The name first, for the messages, even when the rest does not deserialize.
        if let Some(s) = item.get("case_name").and_then(|v| scalar(v).ok().flatten()) {
            self.name = Some(s.text);
        }
        let raw: RawCase = match serde_path_to_error::deserialize(item.clone()) {
            Ok(raw) => raw,
            Err(err) => {
                let path: Vec<String> = err
                    .path()
                    .iter()
                    .filter_map(|s| match s {
                        serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                        _ => None,
                    })
                    .collect();
                let refs: Vec<&str> = path.iter().map(String::as_str).collect();
                let message = explain(&err.into_inner().to_string(), &path);
                self.fail(&refs, "zoo-case.format", message);
                return None;
            }
        };
        let case_name = self.required(&["case_name"], &raw.case_name);
        if let Some(name) = &case_name {
            let name = &name.text;
            let line = self.line(&["case_name"]);
            if let Some(first) = seen.get(name) {
                let first = *first;
                self.fail(
                    &["case_name"],
                    "zoo-case.case-name",
                    format!(
                        "listed twice (first on line {first}); each case has its own case_name"
                    ),
                );
            } else {
                seen.insert(name.clone(), line);
            }
            let plain = !name.starts_with('.')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if !plain {
                self.fail(
                    &["case_name"],
                    "zoo-case.case-name",
                    format!(
                        "`{name}` is not a plain name: use your account name (letters, digits, `.`, `_`, `-`)"
                    ),
                );
            }
        }
        let (run_dir, run_file) = match &raw.desc {
            None => {
                self.fail(
                    &["desc"],
                    "zoo-case.required",
                    "`desc` is missing or empty; give run_dir and run_file".into(),
                );
                (None, None)
            }
            Some(desc) => (
                self.required(&["desc", "run_dir"], &desc.run_dir),
                self.required(&["desc", "run_file"], &desc.run_file),
            ),
        };
        let run_dir_ok = run_dir
            .as_ref()
            .is_some_and(|d| self.check_run_dir(&d.text, root));
        if let Some(file) = &run_file {
            self.check_run_file(
                &file.text,
                run_dir
                    .as_ref()
                    .filter(|_| run_dir_ok)
                    .and_then(|d| root.map(|r| r.join(&d.text)))
                    .as_deref(),
            );
        }
        let mut params = Vec::new();
        let mut others = Vec::new();
        match &raw.params {
            None => self.fail(
                &["params"],
                "zoo-case.required",
                format!(
                    "`params` is missing or empty; give {}",
                    REQUIRED_PARAMS.join(", ")
                ),
            ),
            Some(p) => {
                for name in REQUIRED_PARAMS {
                    if let Some(v) = self.required(&["params", name], p.get(name)) {
                        self.check_param(name, &v);
                        params.push((name.to_string(), v));
                    }
                }
                if let Field::Given(v) = &p.others {
                    others = self.others(v);
                }
            }
        }
        Some(ZooCase {
            case_name: case_name?.text,
            line: self.start + 1,
            run_dir: run_dir?.text,
            run_file: run_file?.text,
            params,
            others,
        })
    }

    /// Prefix, inside the root, an existing directory; true when it is usable.
    fn check_run_dir(&mut self, run_dir: &str, root: Option<&Path>) -> bool {
        let path = &["desc", "run_dir"];
        if !RUN_DIR_PREFIXES.iter().any(|p| run_dir.starts_with(p)) {
            self.fail(
                path,
                "zoo-case.run-dir",
                format!(
                    "`run_dir: {run_dir}` must start with PyTorch/ or PaddlePaddle/: the model directory relative to the zoo root (e.g. PyTorch/contrib/Classification/Demo)"
                ),
            );
            return false;
        }
        if escapes(run_dir) {
            self.fail(
                path,
                "zoo-case.run-dir",
                format!("`run_dir: {run_dir}` must stay inside the zoo root (no `..`)"),
            );
            return false;
        }
        let Some(root) = root else { return false };
        let dir = root.join(run_dir);
        match std::fs::metadata(&dir) {
            // Resolved, symbolic links followed: one pointing out of the zoo root would have
            // the check run (and validate review) a directory the zoo does not hold.
            Ok(m) if m.is_dir() => match outside(&dir, root) {
                Some(real) => {
                    self.fail(
                        path,
                        "zoo-case.run-dir",
                        format!(
                            "`run_dir: {run_dir}` resolves to {}, outside the zoo root {} (a symbolic link leads out of it): the model directory must be in the zoo — replace the link with the directory",
                            real.display(),
                            root.display()
                        ),
                    );
                    false
                }
                None => true,
            },
            Ok(m) => {
                self.fail(
                    path,
                    "zoo-case.run-dir",
                    format!(
                        "`run_dir: {run_dir}` is {}, not a directory ({})",
                        crate::files::kind(m.file_type()),
                        dir.display()
                    ),
                );
                false
            }
            Err(e) => {
                self.fail(
                    path,
                    "zoo-case.run-dir",
                    format!(
                        "`run_dir: {run_dir}` does not exist under the zoo root {} ({e}); give the model directory's path from there",
                        root.display()
                    ),
                );
                false
            }
        }
    }

    /// Prefix, inside run_dir, an existing regular file (checked when run_dir is usable).
    fn check_run_file(&mut self, run_file: &str, dir: Option<&Path>) {
        let path = &["desc", "run_file"];
        if !run_file.starts_with(RUN_FILE_PREFIX) {
            self.fail(
                path,
                "zoo-case.run-file",
                format!(
                    "`run_file: {run_file}` must start with run_scripts/: the script relative to run_dir (e.g. run_scripts/run_demo.py)"
                ),
            );
            return;
        }
        if escapes(run_file) {
            self.fail(
                path,
                "zoo-case.run-file",
                format!("`run_file: {run_file}` must stay inside run_dir (no `..`)"),
            );
            return;
        }
        let Some(dir) = dir else { return };
        let file = dir.join(run_file);
        match std::fs::metadata(&file) {
            Ok(m) if m.is_file() => {
                if let Some(real) = outside(&file, dir) {
                    self.fail(
                        path,
                        "zoo-case.run-file",
                        format!(
                            "`run_file: {run_file}` resolves to {}, outside run_dir {} (a symbolic link leads out of it): the script must be in the model directory — replace the link with the file",
                            real.display(),
                            dir.display()
                        ),
                    );
                }
            }
            Ok(m) => self.fail(
                path,
                "zoo-case.run-file",
                format!(
                    "`run_file: {run_file}` is not a regular file ({}): {}",
                    crate::files::kind(m.file_type()),
                    file.display()
                ),
            ),
            Err(e) => self.fail(
                path,
                "zoo-case.run-file",
                format!(
                    "`run_file: {run_file}` does not exist in run_dir {} ({e}); add the script or fix the path",
                    dir.display()
                ),
            ),
        }
    }

    fn check_param(&mut self, name: &str, v: &Scalar) {
        let path = &["params", name];
        match name {
            "nnodes" | "nproc_per_node" => {
                let positive = v.text.parse::<u64>().is_ok_and(|n| n > 0)
                    && matches!(v.kind, ScalarKind::Integer | ScalarKind::String);
                if !positive {
                    self.fail(
                        path,
                        "zoo-case.params",
                        format!(
                            "`{name}: {}` must be a positive integer ({})",
                            v.text,
                            if name == "nnodes" {
                                "the number of nodes, 1 for one machine"
                            } else {
                                "the number of cards per node"
                            }
                        ),
                    );
                }
            }
            "autocast" => {
                let ok = v.kind == ScalarKind::Bool
                    || (v.kind == ScalarKind::String
                        && matches!(v.text.to_ascii_lowercase().as_str(), "true" | "false"));
                if !ok {
                    self.fail(
                        path,
                        "zoo-case.params",
                        format!(
                            "`autocast: {}` must be True or False (yes/no/on/off read differently in YAML 1.1 and 1.2)",
                            v.text
                        ),
                    );
                }
            }
            "device" if !crate::model_yaml::DEVICES.contains(&v.text.as_str()) => {
                self.fail(
                    path,
                    "zoo-case.params",
                    format!(
                        "`device: {}` is not a device; one of: {} (sdaa for the ModelZoo)",
                        v.text,
                        crate::model_yaml::DEVICES.join(", ")
                    ),
                );
            }
            _ => {}
        }
    }

    fn others(&mut self, value: &Value) -> Vec<(String, Scalar)> {
        let path = &["params", "others"];
        let map = match value {
            Value::Null => return Vec::new(),
            Value::Mapping(m) => m,
            _ => {
                self.fail(
                    path,
                    "zoo-case.others",
                    "`others` must be a mapping of the model's own flags, e.g. `others: {warmup: 5}`"
                        .into(),
                );
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for (k, v) in map {
            let Some(name) = k
                .as_str()
                .map(str::to_string)
                .or_else(|| scalar(k).ok().flatten().map(|s| s.text))
            else {
                self.fail(
                    path,
                    "zoo-case.others",
                    "a key of `others` is not a name; write `flag_name: value`".into(),
                );
                continue;
            };
            let at = ["params", "others", name.as_str()];
            let flag_like = !name.is_empty()
                && !name.starts_with('-')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !flag_like {
                self.fail(
                    &at,
                    "zoo-case.others",
                    format!(
                        "`{name}` is not a flag name (letters, digits, `_`, `-`, `.`; passed as --{name})"
                    ),
                );
                continue;
            }
            if REQUIRED_PARAMS.contains(&name.as_str()) {
                self.fail(
                    &at,
                    "zoo-case.others",
                    format!(
                        "`{name}` is a standard parameter; set it in params, not in others (it would be passed twice)"
                    ),
                );
                continue;
            }
            match scalar(v) {
                Ok(Some(s)) => out.push((name, s)),
                Ok(None) => self.fail(
                    &at,
                    "zoo-case.others",
                    format!("`others.{name}` is empty; give it a value (passed as --{name} <value>)"),
                ),
                Err(what) => self.fail(
                    &at,
                    "zoo-case.others",
                    format!("`others.{name}` is {what}; give a single value (passed as --{name} <value>)"),
                ),
            }
        }
        out
    }
}

/// Where `path` really is (symbolic links resolved) when that is not inside `base` (resolved
/// too); `None` when it is inside, or when either cannot be resolved (the caller has already
/// checked that `path` exists).
fn outside(path: &Path, base: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(path).ok()?;
    let base = std::fs::canonicalize(base).ok()?;
    (!real.starts_with(&base)).then_some(real)
}

/// Absolute, or with a `..`: leaves the directory it is relative to.
fn escapes(path: &str) -> bool {
    let p = Path::new(path);
    p.is_absolute() || p.components().any(|c| matches!(c, Component::ParentDir))
}

/// serde's message for a case, with the valid keys named in words and what to do.
fn explain(message: &str, path: &[String]) -> String {
    let message = message
        .replace(
            "struct RawCase",
            "a case: a mapping of case_name, desc and params",
        )
        .replace("struct RawDesc", "a mapping of run_dir and run_file")
        .replace(
            "struct RawParams",
            "a mapping of the ten parameters and others",
        );
    let at = if path.is_empty() {
        "the case".to_string()
    } else {
        format!("`{}`", path.join("."))
    };
    if message.starts_with("unknown field") {
        let hint = if path.first().is_some_and(|p| p == "params") {
            "; put the model's own flags under `params.others`"
        } else {
            ""
        };
        format!("{at}: {message}{hint}")
    } else {
        format!("{at}: {message}")
    }
}

/// Line lookup in block-style YAML: where each top-level list item begins and on which line a
/// key path of an item is. Best effort (flow style falls back to the item's first line).
struct Locator<'a> {
    lines: Vec<&'a str>,
}

impl<'a> Locator<'a> {
    fn new(text: &'a str) -> Locator<'a> {
        Locator {
            lines: text.lines().collect(),
        }
    }

    fn len(&self) -> usize {
        self.lines.len()
    }

    /// Not blank, not a comment, not a document marker.
    fn significant(&self, l: usize) -> bool {
        let t = self.lines[l].trim();
        !(t.is_empty() || t.starts_with('#') || t == "---" || t == "..." || t.starts_with('%'))
    }

    fn indent(&self, l: usize) -> usize {
        let line = self.lines[l];
        line.len() - line.trim_start_matches(' ').len()
    }

    /// 0-based line of the first line that is not blank or a comment.
    fn first_significant(&self) -> Option<usize> {
        (0..self.len()).find(|&l| self.significant(l))
    }

    /// 0-based lines of every `case_name` key, in order (one entry per key, so items sharing
    /// a line share it): where the items of a flow-style list begin. One pass over the text.
    fn flow_items(&self) -> Vec<usize> {
        const KEY: &str = "case_name";
        let mut out = Vec::new();
        for (l, line) in self.lines.iter().enumerate() {
            if line.trim_start().starts_with('#') {
                continue;
            }
            for (at, _) in line.match_indices(KEY) {
                let before = line[..at].chars().next_back();
                let after = line[at + KEY.len()..].trim_start_matches(['"', '\'']);
                let is_key = before
                    .is_none_or(|c| matches!(c, '{' | ',' | ' ' | '\t' | '"' | '\''))
                    && after.trim_start().starts_with(':');
                if is_key {
                    out.push(l);
                }
            }
        }
        out
    }

    /// 0-based first lines of the top-level list's items.
    fn items(&self) -> Vec<usize> {
        let Some(first) = self.first_significant() else {
            return Vec::new();
        };
        let col = self.indent(first);
        let is_item = |l: usize| {
            let line = self.lines[l];
            self.indent(l) == col && {
                let rest = &line[col..];
                rest == "-" || rest.starts_with("- ") || rest.starts_with("-\t")
            }
        };
        if !is_item(first) {
            return Vec::new();
        }
        (first..self.len()).filter(|&l| is_item(l)).collect()
    }

    /// `(column, key)` of a `key:` on line `l`, after any `- ` list markers.
    fn key_at(&self, l: usize) -> Option<(usize, &'a str)> {
        let line = self.lines[l];
        let mut col = self.indent(l);
        let mut rest = &line[col..];
        while let Some(r) = rest.strip_prefix("- ") {
            let trimmed = r.trim_start_matches(' ');
            col += rest.len() - trimmed.len();
            rest = trimmed;
        }
        let (key, after) = match rest.chars().next()? {
            q @ ('"' | '\'') => {
                let close = rest[1..].find(q)? + 1;
                (&rest[1..close], &rest[close + 1..])
            }
            _ => {
                let colon = rest.find(':')?;
                (rest[..colon].trim_end(), &rest[colon..])
            }
        };
        let after = after.trim_start();
        let after = after.strip_prefix(':')?;
        (after.is_empty() || after.starts_with([' ', '\t'])).then_some((col, key))
    }

    /// 1-based line of `path` (keys from the item down) within lines `[start, end)`: the
    /// deepest key found, else the item's first line.
    fn find(&self, start: usize, end: usize, path: &[&str]) -> usize {
        let (mut lo, mut hi) = (start, end.min(self.len()));
        let mut line = start;
        // The column the keys of the current level are at (the item's: its first key's).
        let mut level = self.key_at(start).map(|(c, _)| c);
        for key in path {
            let hit = (lo..hi).find(|&l| {
                self.key_at(l)
                    .is_some_and(|(c, k)| k == *key && level.is_none_or(|lc| c == lc))
            });
            let Some(l) = hit else { break };
            line = l;
            let col = self.key_at(l).map_or(0, |(c, _)| c);
            lo = l + 1;
            hi = (lo..hi)
                .find(|&m| self.significant(m) && self.indent(m) <= col)
                .unwrap_or(hi);
            level = (lo..hi)
                .find(|&m| self.significant(m))
                .and_then(|m| self.key_at(m))
                .map(|(c, _)| c);
        }
        line + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locator_finds_nested_keys_at_their_own_level() {
        let text = "\
# cases
- case_name: a
  desc:
    run_dir: PyTorch/x
    run_file: run_scripts/r.py
  params:
    others:
      lr: 1
    lr: 0.1
- case_name: b
  params: {lr: 2}
";
        let l = Locator::new(text);
        let items = l.items();
        assert_eq!(items, vec![1, 9]);
        assert_eq!(l.find(1, 9, &["case_name"]), 2);
        assert_eq!(l.find(1, 9, &["desc", "run_file"]), 5);
        assert_eq!(
            l.find(1, 9, &["params", "lr"]),
            9,
            "params.lr, not others.lr"
        );
        assert_eq!(l.find(1, 9, &["params", "others", "lr"]), 8);
        // Flow style: the parent's line.
        assert_eq!(l.find(9, 11, &["params", "lr"]), 11);
        assert_eq!(l.find(9, 11, &["desc"]), 10);
    }

    /// Issue #38 C11: a flow-style list's items are found by their `case_name` keys in one
    /// pass, so each case is looked up in its own lines (not the whole file: quadratic).
    #[test]
    fn flow_style_items_begin_at_their_case_name() {
        let text = "\
# a flow list
[
  {case_name: a, desc: {run_dir: x}},
  {\"case_name\": b}, {'case_name' : c},
  {desc: {run_dir: my_case_name}, case_name: d}
]
";
        let l = Locator::new(text);
        assert_ne!(l.items().len(), 4, "not a block list");
        assert_eq!(l.flow_items(), vec![2, 3, 3, 4]);
        let cases = ZooCases::inspect_text(text, Path::new("/nonexistent/model.yaml"));
        let lines: Vec<usize> = cases
            .violations
            .iter()
            .filter(|v| v.case.as_deref() == Some("c"))
            .map(|v| v.line)
            .collect();
        assert!(!lines.is_empty(), "{:?}", cases.violations);
        assert!(
            lines.iter().all(|&l| l == 4),
            "case c is on line 4: {lines:?}"
        );
    }
}
