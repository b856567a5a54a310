//! `model.yaml`: the zoo's index of models, one entry per model, which the PR functional check
//! (`modelzoo ci`) runs (adaptation guide §3.7).
//!
//! ```yaml
//! # <zoo>/model_config/model.yaml — paths are relative to <zoo> (the directory above this one)
//! models:
//!   - name: resnet
//!     path: modelzoo/resnet
//!     framework: rust-tch
//!     category: Classification
//!     devices: [cpu, cuda, sdaa]
//!     command: run_resnet --model_name resnet18 --device {device} --step 5 --output_dir {output_dir}
//!     log: "{output_dir}/dllogger.json"
//!     metrics: [train.loss, train.ips]
//!     timeout: 600
//! ```
//!
//! Unknown keys and missing fields are errors carrying the file, line and the valid keys.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The keys of one entry, in the order they are documented (error messages list them).
pub const ENTRY_KEYS: &[&str] = &[
    "name",
    "path",
    "framework",
    "category",
    "devices",
    "command",
    "log",
    "metrics",
    "timeout",
];

/// The devices an entry may list.
pub const DEVICES: &[&str] = &["cpu", "cuda", "sdaa"];

/// The top-level keys of model.yaml.
pub const TOP_KEYS: &[&str] = &["root", "models"];

/// Longest `timeout` an entry may ask for, in seconds (24 h). A functional run is a few
/// `--step`s; a larger value is a mistake, and near `u64::MAX` it cannot even be added to the
/// clock.
pub const MAX_TIMEOUT: u64 = 86_400;

/// What a model is written in; decides how CI and `validate` treat it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Framework {
    /// A Rust crate of this repository on libtorch through tch.
    RustTch,
    /// A PyTorch model directory (Tecorigin layout, torch_sdaa on SDAA).
    Pytorch,
    /// A PaddlePaddle model directory.
    Paddle,
}

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Framework::RustTch => "rust-tch",
            Framework::Pytorch => "pytorch",
            Framework::Paddle => "paddle",
        })
    }
}

/// One model of the zoo, as the PR functional check needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// Unique model name (`resnet`); `[a-z0-9_-]+`.
    pub name: String,
    /// Model directory, relative to the zoo root.
    pub path: String,
    pub framework: Framework,
    /// ModelZoo category (`Classification`, `NLP`, ...).
    pub category: String,
    /// Devices the model runs on: `cpu`, `cuda`, `sdaa`.
    pub devices: Vec<String>,
    /// The functional-test command, run by `sh -c` in the model directory. Must pass `--step`
    /// (a short run). `{device}` and `{output_dir}` are replaced by CI.
    pub command: String,
    /// The dllogger log the command writes: `{output_dir}/<file>`, `{output_dir}` replaced as
    /// in `command`. It must be inside `{output_dir}` (see [`ModelEntry::check_log`]).
    pub log: String,
    /// Metrics the log must contain (`train.loss`, `train.ips`, ...).
    pub metrics: Vec<String>,
    /// Seconds the command may run before CI kills it; 1 to [`MAX_TIMEOUT`].
    pub timeout: u64,
}

/// A loaded model.yaml: the zoo root the paths are relative to, and the entries.
#[derive(Debug, Clone)]
pub struct ModelYaml {
    /// The file it was read from.
    pub file: PathBuf,
    /// Directory the entries' `path`s are relative to.
    pub root: PathBuf,
    pub models: Vec<ModelEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    /// Zoo root relative to model.yaml's directory; default `..`.
    #[serde(default)]
    root: Option<PathBuf>,
    #[serde(default)]
    models: Vec<ModelEntry>,
}

/// Why a model.yaml cannot be used, with the file and (where known) the line.
#[derive(Debug, thiserror::Error)]
pub enum ModelYamlError {
    #[error("cannot read {}: {error}", path.display())]
    Read {
        path: PathBuf,
        /// Included in the message (not chained, so it is printed once).
        error: std::io::Error,
    },
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Parse {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
    #[error("{}{}: model `{name}`: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Entry {
        path: PathBuf,
        line: Option<usize>,
        name: String,
        message: String,
    },
    #[error("cannot write {}: {error}", path.display())]
    Write {
        path: PathBuf,
        /// Included in the message (not chained, so it is printed once).
        error: std::io::Error,
    },
}

impl ModelYaml {
    /// Reads and checks a model.yaml. Only a regular file is read: a FIFO (or another
    /// non-regular file) is a `Read` error naming what it is, never a read that blocks.
    pub fn load(path: &Path) -> Result<ModelYaml, ModelYamlError> {
        let text = crate::files::read_to_string(path).map_err(|source| ModelYamlError::Read {
            path: path.to_path_buf(),
            error: source,
        })?;
        ModelYaml::parse(&text, path)
    }

    /// Parses model.yaml text; `path` locates the zoo root and is named in errors.
    pub fn parse(text: &str, path: &Path) -> Result<ModelYaml, ModelYamlError> {
        let raw: RawFile = if text.trim().is_empty() {
            RawFile {
                root: None,
                models: Vec::new(),
            }
        } else {
            crate::yaml::from_str(text).map_err(|e| parse_error(path, &e))?
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let root = normalize(&dir.join(raw.root.unwrap_or_else(|| PathBuf::from(".."))));
        let yaml = ModelYaml {
            file: path.to_path_buf(),
            root,
            models: raw.models,
        };
        yaml.check(text)?;
        Ok(yaml)
    }

    /// The checks serde cannot express: unique names, `--step` in the command, known
    /// devices, at least one metric, a timeout of 1 s to [`MAX_TIMEOUT`], a relative path
    /// inside the root, a log inside `{output_dir}`.
    fn check(&self, text: &str) -> Result<(), ModelYamlError> {
        let mut seen = HashSet::new();
        for entry in &self.models {
            let fail = |message: String| ModelYamlError::Entry {
                path: self.file.clone(),
                line: entry_line(text, &entry.name),
                name: entry.name.clone(),
                message,
            };
            if entry.name.is_empty()
                || !entry
                    .name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
            {
                return Err(fail(
                    "`name` must be lowercase letters, digits, `_` or `-`".into(),
                ));
            }
            if !seen.insert(entry.name.as_str()) {
                return Err(fail("listed twice; each model has one entry".into()));
            }
            let p = Path::new(&entry.path);
            if entry.path.is_empty()
                || p.is_absolute()
                || p.components()
                    .any(|c| matches!(c, std::path::Component::ParentDir))
            {
                return Err(fail(format!(
                    "`path: {}` must be a relative path inside the zoo root {} (no `..`)",
                    entry.path,
                    self.root.display()
                )));
            }
            let words = shell_words(&entry.command).map_err(|why| {
                fail(format!(
                    "`command` is not a valid sh command line ({why}): `{}`",
                    entry.command
                ))
            })?;
            if !words.iter().any(|w| is_step_flag(w)) {
                return Err(fail(format!(
                    "`command` must pass --step for a short functional run (adaptation guide §3.3; \
                     a --step in a comment or inside a quoted argument does not count), got `{}`",
                    entry.command
                )));
            }
            if entry.devices.is_empty() {
                return Err(fail(format!(
                    "`devices` is empty; list where it runs, from: {}",
                    DEVICES.join(", ")
                )));
            }
            if let Some(bad) = entry
                .devices
                .iter()
                .find(|d| !DEVICES.contains(&d.as_str()))
            {
                return Err(fail(format!(
                    "unknown device `{bad}` in `devices`; valid: {}",
                    DEVICES.join(", ")
                )));
            }
            if entry.metrics.is_empty() {
                return Err(fail(
                    "`metrics` is empty; list what the log must contain, e.g. [train.loss, train.ips]"
                        .into(),
                ));
            }
            if entry.log.trim().is_empty() {
                return Err(fail(
                    "`log` is empty; give the log file the command writes".into(),
                ));
            }
            entry.check_log().map_err(fail)?;
            if entry.timeout == 0 {
                return Err(fail("`timeout` must be at least 1 second".into()));
            }
            if entry.timeout > MAX_TIMEOUT {
                return Err(fail(format!(
                    "`timeout: {}` is more than the limit of {MAX_TIMEOUT} seconds (24 h); \
                     a functional run with --step should take minutes",
                    entry.timeout
                )));
            }
        }
        Ok(())
    }

    /// The entry named `name`.
    pub fn get(&self, name: &str) -> Option<&ModelEntry> {
        self.models.iter().find(|m| m.name == name)
    }

    /// The model directory of an entry.
    pub fn model_dir(&self, entry: &ModelEntry) -> PathBuf {
        self.root.join(&entry.path)
    }

    /// Appends an entry to the model.yaml at `path` (created, with a header, when missing),
    /// keeping the existing text and comments; atomic (temp file + rename). Refuses a name
    /// that is already listed. Returns the reloaded file.
    pub fn append_entry(path: &Path, entry: &ModelEntry) -> Result<ModelYaml, ModelYamlError> {
        let existing = match crate::files::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(ModelYamlError::Read {
                    path: path.to_path_buf(),
                    error: source,
                })
            }
        };
        let mut text = match &existing {
            Some(text) => {
                let current = ModelYaml::parse(text, path)?;
                if current.get(&entry.name).is_some() {
                    return Err(ModelYamlError::Entry {
                        path: path.to_path_buf(),
                        line: entry_line(text, &entry.name),
                        name: entry.name.clone(),
                        message: "already has an entry; edit it instead".into(),
                    });
                }
                let mut text = text.clone();
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                if !has_models_key(&text) {
                    text.push_str("models:\n");
                }
                text
            }
            None => NEW_FILE_HEADER.to_string(),
        };
        text.push_str(&render_entry(entry));
        // Check what we are about to write before it replaces anything.
        let reloaded = ModelYaml::parse(&text, path)?;
        path.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| modelzoo_support::write_atomic(path, text.as_bytes()))
            .map_err(|source| ModelYamlError::Write {
                path: path.to_path_buf(),
                error: source,
            })?;
        Ok(reloaded)
    }
}

impl ModelEntry {
    /// The command with `{device}` and `{output_dir}` filled in (the directory shell-quoted).
    pub fn command_for(&self, device: &str, output_dir: &Path) -> String {
        self.command
            .replace("{device}", device)
            .replace("{output_dir}", &shell_quote(&output_dir.to_string_lossy()))
    }

    /// Refuses a `log` that is not a file inside `{output_dir}`: CI empties that directory
    /// before each run, so a log there was written by this run; a file anywhere else may be
    /// left from an earlier run and would pass for this one. `Err` says so, for messages.
    pub fn check_log(&self) -> Result<(), String> {
        let inside = self.log.strip_prefix("{output_dir}/").is_some_and(|rest| {
            let rest = Path::new(rest);
            !rest.as_os_str().to_string_lossy().contains("{output_dir}")
                && rest.components().all(|c| {
                    matches!(
                        c,
                        std::path::Component::Normal(_) | std::path::Component::CurDir
                    )
                })
                && rest
                    .components()
                    .any(|c| matches!(c, std::path::Component::Normal(_)))
        });
        if inside {
            Ok(())
        } else {
            Err(format!(
                "`log: {}` must be a file inside {{output_dir}} (e.g. \"{{output_dir}}/train.log\", \
                 no `..`): CI empties {{output_dir}} before each run, so only a log there is \
                 known to be from this run; make the command write (or copy) its log there",
                self.log
            ))
        }
    }

    /// Where the log will be, given the model directory and the run's output directory.
    pub fn log_path(&self, model_dir: &Path, output_dir: &Path) -> PathBuf {
        let log = self
            .log
            .replace("{output_dir}", &output_dir.to_string_lossy());
        model_dir.join(log)
    }
}

const NEW_FILE_HEADER: &str = "\
# The zoo's model index: what the PR functional check (`modelzoo ci`) runs.
# Paths are relative to the directory above model_config/. Schema: docs/model-yaml.md.
models:
";

/// One entry as YAML list item text, indented under `models:`.
fn render_entry(entry: &ModelEntry) -> String {
    let body = serde_yaml::to_string(entry).unwrap_or_default();
    let mut out = String::new();
    for (i, line) in body.lines().enumerate() {
        out.push_str(if i == 0 { "  - " } else { "    " });
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn has_models_key(text: &str) -> bool {
    text.lines().any(|l| {
        l.strip_prefix("models")
            .is_some_and(|rest| rest.trim_start().starts_with(':'))
    })
}

/// The real path when it exists (symlinks and `..` resolved, so messages read well and `..`
/// means what the file system says), else the path as joined.
fn normalize(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `--step N`, `--step=N` (or the `--steps` alias) as a word of the command as `sh` splits
/// it: not in a `#` comment, not inside a quoted argument. False when the command does not
/// split (an unterminated quote).
pub fn uses_step(command: &str) -> bool {
    shell_words(command).is_ok_and(|words| words.iter().any(|w| is_step_flag(w)))
}

fn is_step_flag(word: &str) -> bool {
    let flag = word.split('=').next().unwrap_or(word);
    flag == "--step" || flag == "--steps"
}

/// The words of a POSIX `sh` command line as the shell splits them: quotes and backslashes
/// removed, `#` comments (a `#` that starts a word) dropped, blanks, newlines and the operator
/// characters `; & | ( ) < >` separating words (the operators themselves are not returned).
/// Expansions are left as written. `Err` for an unterminated quote.
///
/// Not `shlex::split`: it does not end a word at an operator, so in `run;# --step 5` the
/// comment would not be one and `--step` would count.
pub fn shell_words(command: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => {
                words.extend(word.take());
            }
            '#' if word.is_none() => while chars.next_if(|&n| n != '\n').is_some() {},
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(n) => word.get_or_insert_with(String::new).push(n),
                None => word.get_or_insert_with(String::new).push('\\'),
            },
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(n) => w.push(n),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(n @ ('$' | '`' | '"' | '\\')) => w.push(n),
                            Some('\n') => {}
                            Some(n) => {
                                w.push('\\');
                                w.push(n);
                            }
                            None => return Err("unterminated double quote".into()),
                        },
                        Some(n) => w.push(n),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// Single-quotes `s` for `sh` unless it is plainly safe.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Line of `name: <name>` in the text (best effort, for messages).
fn entry_line(text: &str, name: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start().trim_start_matches("- ").trim_start();
            l.strip_prefix("name:")
                .map(|v| v.trim().trim_matches(|c| c == '"' || c == '\'') == name)
                .unwrap_or(false)
        })
        .map(|i| i + 1)
}

fn parse_error(path: &Path, e: &crate::yaml::YamlError) -> ModelYamlError {
    let mut message = e.message();
    if message.contains("missing field") {
        message.push_str(&format!(
            "; an entry has the keys: {}",
            ENTRY_KEYS.join(", ")
        ));
    }
    ModelYamlError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        message,
    }
}
