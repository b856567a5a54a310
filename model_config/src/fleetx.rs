//! FleetX-style training configuration: a YAML document (`-c file.yaml`) with sections
//! (`Engine`, `Data`, `Model`, `Optimizer`, ...) plus `-o Section.key.sub=value` overrides,
//! read into typed sections.
//!
//! The typed sections deny unknown keys, so a misspelled key in the file or in an override is
//! an error that names the key path, lists the valid keys and says where the value came from
//! (the file and line, or the override). A key left empty (`accumulate_steps:`) means "use the
//! default", as in FleetX's own configs.
//!
//! ```no_run
//! # fn main() -> Result<(), model_config::fleetx::ConfigError> {
//! use model_config::fleetx::{self, EngineConfig};
//! let tree = fleetx::load(Some("gpt.yaml".as_ref()), &["Engine.max_steps=100".to_string()])?;
//! tree.check_sections(&["Engine", "Data", "Model", "Optimizer"])?;
//! let engine: EngineConfig = tree.section("Engine")?.unwrap_or_default();
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_yaml::{Mapping, Value};

/// Where a value of the configuration came from; carried by every error so the user knows
/// whether to fix the file or the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// The `-c` file, with the 1-based line when the YAML parser could tell it.
    File { path: PathBuf, line: Option<usize> },
    /// A `-o` override, as the user wrote it.
    Override(String),
    /// The built-in defaults (no file, no override touched it).
    Defaults,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File {
                path,
                line: Some(line),
            } => write!(f, "{}:{line}", path.display()),
            Origin::File { path, line: None } => write!(f, "{}", path.display()),
            Origin::Override(text) => write!(f, "override `-o {text}`"),
            Origin::Defaults => write!(f, "built-in defaults"),
        }
    }
}

/// Everything that can go wrong loading a FleetX config, with the file, line, key or
/// override it concerns.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {error}", path.display())]
    Read {
        path: PathBuf,
        /// Included in the message (not chained, so it is printed once).
        error: std::io::Error,
    },
    #[error("{}{}: invalid YAML: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Yaml {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
    #[error("{}: the top level of a config must be a mapping of sections (Engine:, Data:, ...), found {found}", path.display())]
    NotAMapping { path: PathBuf, found: &'static str },
    #[error("bad override `-o {text}`: {reason} (expected `-o Section.key=value`, e.g. `-o Engine.max_steps=100`)")]
    OverrideSyntax { text: String, reason: String },
    #[error("override `-o {text}` sets `{key}` below `{parent}`, but `{parent}` is a {found}, not a mapping")]
    OverrideConflict {
        text: String,
        key: String,
        parent: String,
        found: &'static str,
    },
    #[error("{origin}: `{key}`: {message}")]
    Invalid {
        /// Full key path, e.g. `Engine.mix_precision.scale_loss`.
        key: String,
        origin: Origin,
        /// serde's message; for an unknown key it lists the valid ones.
        message: String,
    },
    #[error("{origin}: unknown config section `{section}`; valid sections: {}", valid.join(", "))]
    UnknownSection {
        section: String,
        origin: Origin,
        valid: Vec<String>,
    },
}

/// The merged configuration document: the `-c` file with the `-o` overrides applied.
#[derive(Debug, Clone)]
pub struct ConfigTree {
    root: Mapping,
    file: Option<PathBuf>,
    /// The file's text, kept to recover line numbers for typed-section errors.
    file_text: Option<String>,
    /// Applied overrides: (key path segments, override text as written).
    overrides: Vec<(Vec<String>, String)>,
}

/// Reads the optional `-c` file and applies the `-o` overrides in order (a later override of
/// the same key wins). Each override's value is parsed as a YAML scalar or flow value (`100`,
/// `1e-4`, `true`, `'str'`, `[1, 2]`); an empty value means null (the default).
pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<ConfigTree, ConfigError> {
    let mut tree = match path {
        Some(path) => ConfigTree::from_file(path)?,
        None => ConfigTree {
            root: Mapping::new(),
            file: None,
            file_text: None,
            overrides: Vec::new(),
        },
    };
    for text in overrides {
        tree.apply_override(text)?;
    }
    Ok(tree)
}

impl ConfigTree {
    /// Parses a config from YAML text; `path` is only used in messages.
    pub fn from_str(text: &str, path: &Path) -> Result<ConfigTree, ConfigError> {
        let value: Value = crate::yaml::from_str(text).map_err(|e| ConfigError::Yaml {
            path: path.to_path_buf(),
            line: e.line(),
            message: e.message(),
        })?;
        let root = match value {
            Value::Mapping(m) => m,
            Value::Null => Mapping::new(),
            other => {
                return Err(ConfigError::NotAMapping {
                    path: path.to_path_buf(),
                    found: kind(&other),
                })
            }
        };
        Ok(ConfigTree {
            root,
            file: Some(path.to_path_buf()),
            file_text: Some(text.to_string()),
            overrides: Vec::new(),
        })
    }

    fn from_file(path: &Path) -> Result<ConfigTree, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            error: source,
        })?;
        ConfigTree::from_str(&text, path)
    }

    /// Applies one `Section.key.sub=value` override.
    pub fn apply_override(&mut self, text: &str) -> Result<(), ConfigError> {
        let syntax = |reason: &str| ConfigError::OverrideSyntax {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let (key, raw) = text.split_once('=').ok_or_else(|| syntax("no `=`"))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(syntax("empty key"));
        }
        let segments: Vec<String> = key.split('.').map(str::to_string).collect();
        if segments.iter().any(|s| s.is_empty()) {
            return Err(syntax(
                "empty key segment (two dots, or a leading/trailing dot)",
            ));
        }
        let value: Value = if raw.trim().is_empty() {
            Value::Null
        } else {
            crate::yaml::from_str(raw).map_err(|e| {
                syntax(&format!(
                    "value `{raw}` is not a YAML value: {}",
                    e.message()
                ))
            })?
        };
        let mut node = &mut self.root;
        for (depth, segment) in segments[..segments.len() - 1].iter().enumerate() {
            let slot = node
                .entry(Value::String(segment.clone()))
                .or_insert_with(|| Value::Mapping(Mapping::new()));
            if slot.is_null() {
                *slot = Value::Mapping(Mapping::new());
            }
            node = match slot {
                Value::Mapping(m) => m,
                other => {
                    return Err(ConfigError::OverrideConflict {
                        text: text.to_string(),
                        key: key.to_string(),
                        parent: segments[..=depth].join("."),
                        found: kind(other),
                    })
                }
            };
        }
        let last = segments.last().cloned().unwrap_or_default();
        node.insert(Value::String(last), value);
        self.overrides.push((segments, text.to_string()));
        Ok(())
    }

    /// The raw merged document, for consumers with sections of free-form shape.
    pub fn raw(&self) -> &Mapping {
        &self.root
    }

    /// Names of the top-level sections present, in document order.
    pub fn section_names(&self) -> Vec<String> {
        self.root.keys().map(key_text).collect()
    }

    /// Errors on the first top-level section not in `known`, naming where it came from and
    /// listing the valid section names. Call it when the consumer knows all its sections.
    pub fn check_sections(&self, known: &[&str]) -> Result<(), ConfigError> {
        for name in self.section_names() {
            if !known.contains(&name.as_str()) {
                let path = vec![name.clone()];
                return Err(ConfigError::UnknownSection {
                    origin: self.origin_of(&path),
                    section: name,
                    valid: known.iter().map(|s| s.to_string()).collect(),
                });
            }
        }
        Ok(())
    }

    /// The section `name` deserialized into `T` (use `#[serde(deny_unknown_fields)]` on `T`
    /// so misspelled keys are caught); `Ok(None)` when the section is absent or empty.
    /// Keys whose value is empty (null) fall back to `T`'s default for that field.
    pub fn section<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, ConfigError> {
        let Some(value) = self.root.get(name) else {
            return Ok(None);
        };
        if value.is_null() {
            return Ok(None);
        }
        let mut value = value.clone();
        // Each pass either succeeds, fails for real, or removes one null the type rejected.
        loop {
            match serde_path_to_error::deserialize::<_, T>(value.clone()) {
                Ok(parsed) => return Ok(Some(parsed)),
                Err(err) => {
                    let segments = path_segments(err.path());
                    let message = err.into_inner().to_string();
                    // An unknown key stays an error even when its value is empty.
                    let type_error = message.starts_with("invalid type");
                    if type_error && remove_if_null(&mut value, &segments) {
                        continue;
                    }
                    let mut full = vec![name.to_string()];
                    full.extend(segments);
                    let origin = self.origin_of(&full);
                    return Err(ConfigError::Invalid {
                        key: full.join("."),
                        origin,
                        message: strip_location(&message),
                    });
                }
            }
        }
    }

    /// Where the value at `path` came from: the last override at or above it (or below it,
    /// for a mapping an override created), else the file, else the defaults.
    fn origin_of(&self, path: &[String]) -> Origin {
        let hit = self.overrides.iter().rev().find(|(key, _)| {
            let n = key.len().min(path.len());
            key[..n] == path[..n]
        });
        if let Some((_, text)) = hit {
            return Origin::Override(text.clone());
        }
        match &self.file {
            Some(file) => Origin::File {
                path: file.clone(),
                line: self.line_in_file(path),
            },
            None => Origin::Defaults,
        }
    }

    /// Best-effort line of `path` in the file, following block-style indentation (enough
    /// for the configs people write; `None` when the key cannot be found, e.g. flow style).
    fn line_in_file(&self, path: &[String]) -> Option<usize> {
        let text = self.file_text.as_deref()?;
        let mut parent_indent: Option<usize> = None;
        let mut found = None;
        let mut lines = text.lines().enumerate();
        for segment in path {
            found = None;
            for (i, line) in lines.by_ref() {
                let content = line.trim_start();
                if content.is_empty() || content.starts_with('#') {
                    continue;
                }
                let indent = line.len() - content.len();
                if parent_indent.is_some_and(|p| indent <= p) {
                    return None;
                }
                let key = content.trim_start_matches("- ");
                let matches = key
                    .strip_prefix(segment.as_str())
                    .is_some_and(|rest| rest.trim_start().starts_with(':'))
                    || key
                        .strip_prefix(&format!("\"{segment}\""))
                        .or_else(|| key.strip_prefix(&format!("'{segment}'")))
                        .is_some_and(|rest| rest.trim_start().starts_with(':'));
                if matches {
                    parent_indent = Some(indent);
                    found = Some(i + 1);
                    break;
                }
            }
            found?;
        }
        found
    }
}

fn path_segments(path: &serde_path_to_error::Path) -> Vec<String> {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|s| match s {
            Segment::Map { key } => Some(key.clone()),
            Segment::Seq { index } => Some(index.to_string()),
            Segment::Enum { variant } => Some(variant.clone()),
            Segment::Unknown => None,
        })
        .collect()
}

/// Removes the mapping entry at `segments` if its value is null; true when it did.
fn remove_if_null(value: &mut Value, segments: &[String]) -> bool {
    let Some((last, parents)) = segments.split_last() else {
        return false;
    };
    let mut node = value;
    for seg in parents {
        node = match node {
            Value::Mapping(m) => match m.get_mut(seg.as_str()) {
                Some(v) => v,
                None => return false,
            },
            _ => return false,
        };
    }
    match node {
        Value::Mapping(m) if m.get(last.as_str()).is_some_and(Value::is_null) => {
            m.remove(last.as_str());
            true
        }
        _ => false,
    }
}

fn key_text(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        other => serde_yaml::to_string(other)
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Sequence(_) => "list",
        Value::Mapping(_) => "mapping",
        Value::Tagged(_) => "tagged value",
    }
}

/// serde_yaml appends " at line L column C"; the errors here carry the position themselves.
fn strip_location(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// The `Engine` section: how the engine trains (steps, logging, eval, AMP, checkpoints).
/// Defaults are FleetX's (see the FleetX `standard.md` / GPT single-card docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Maximum number of optimizer steps (FleetX: 500000).
    pub max_steps: u64,
    /// Number of passes over the training data.
    pub num_train_epochs: u64,
    /// Gradient accumulation steps per optimizer step.
    pub accumulate_steps: u64,
    /// Log training metrics every this many steps.
    pub logging_freq: u64,
    /// Evaluate every this many steps.
    pub eval_freq: u64,
    /// Batches per evaluation.
    pub eval_iters: u64,
    /// Batches per test run; `None` = the whole test set.
    pub test_iters: Option<u64>,
    pub mix_precision: MixPrecision,
    pub save_load: SaveLoad,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_steps: 500_000,
            num_train_epochs: 1,
            accumulate_steps: 1,
            logging_freq: 1,
            eval_freq: 500,
            eval_iters: 10,
            test_iters: None,
            mix_precision: MixPrecision::default(),
            save_load: SaveLoad::default(),
        }
    }
}

/// `Engine.mix_precision`: automatic mixed precision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MixPrecision {
    /// Train in low precision. FleetX's GPT configs set `True`; the default here is off so a
    /// CPU run without a config stays in fp32.
    pub use_pure_fp16: bool,
    /// Low-precision dtype: `float16` or `bfloat16`.
    pub dtype: String,
    /// Initial loss scale for fp16.
    pub scale_loss: f64,
    /// Ops kept in fp32 (numerically unsafe in fp16).
    pub custom_black_list: Vec<String>,
    /// Ops forced to fp16 (safe and performance-critical).
    pub custom_white_list: Vec<String>,
}

impl Default for MixPrecision {
    fn default() -> Self {
        MixPrecision {
            use_pure_fp16: false,
            dtype: "float16".to_string(),
            scale_loss: 32768.0,
            custom_black_list: Vec::new(),
            custom_white_list: Vec::new(),
        }
    }
}

/// `Engine.save_load`: checkpoint cadence and locations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SaveLoad {
    /// Save a checkpoint every this many steps.
    pub save_steps: u64,
    /// Save a checkpoint every this many epochs.
    pub save_epoch: u64,
    /// Where checkpoints and logs are written.
    pub output_dir: PathBuf,
    /// Checkpoint to resume from; `None` = start fresh.
    pub ckpt_dir: Option<PathBuf>,
    /// Keep only the newest N checkpoints; `None` = keep all.
    pub keep_last: Option<usize>,
}

impl Default for SaveLoad {
    fn default() -> Self {
        SaveLoad {
            save_steps: 1000,
            save_epoch: 1,
            output_dir: PathBuf::from("./output"),
            ckpt_dir: None,
            keep_last: None,
        }
    }
}
