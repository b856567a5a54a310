//! FleetX-style training configuration: a YAML document (`-c file.yaml`) with sections
//! (`Engine`, `Data`, `Model`, `Optimizer`, ...) plus `-o Section.key.sub=value` overrides,
//! read into typed sections.
//!
//! The typed sections deny unknown keys, so a misspelled key in the file or in an override is
//! an error that names the key path, lists the valid keys and says where the value came from
//! (the file and line, or the override). A key left empty (`accumulate_steps:`) means "use the
//! default", as in FleetX's own configs.
//!
//! A file may inherit from others with FleetX's `_base_: ./base.yaml` (or a list of paths),
//! relative to the file: bases are merged depth-first, base first, the file's own keys win;
//! mappings merge key by key, lists and scalars are replaced. Errors in a key name the file
//! that set it, base or not. A loop, a chain deeper than [`MAX_BASE_DEPTH`] or a missing base
//! is an error naming the chain or the file and line that refers to it.
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
    /// A `_base_` that cannot be followed: missing, unreadable, not a path, a loop, too deep.
    /// `path` / `line` are the file that refers to it and the line of its `_base_` key.
    #[error("{}{}: `_base_`: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Base {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
}

/// Most `_base_` files a chain may hold below the `-c` file (FleetX's own configs use one).
pub const MAX_BASE_DEPTH: usize = 8;

/// The largest config file (`-c` or a `_base_`) read: real FleetX configs are a few KB; a
/// larger file is refused before it is read (docs/run_gpt.md, "Input bounds").
pub const MAX_CONFIG_BYTES: u64 = 16 * modelzoo_support::input::MIB;

/// One file of a configuration: the `-c` file or a `_base_` it inherits from.
#[derive(Debug, Clone)]
struct ConfigFile {
    path: PathBuf,
    /// The text, kept to recover line numbers for typed-section errors.
    text: String,
    /// Its own keys (`_base_` removed), to tell which file set a value.
    root: Mapping,
}

/// Where the `-c` file ends: its last line that holds anything, and the top-level section
/// that line belongs to (for "truncated?" messages).
#[derive(Debug, Clone, PartialEq)]
pub struct FileEnd {
    pub path: PathBuf,
    /// 1-based; 0 for a file with no content.
    pub line: usize,
    /// The top-level key the last line lies under (`Model`), if any.
    pub section: Option<String>,
}

/// The merged configuration document: the `-c` file over its `_base_` files, with the `-o`
/// overrides applied.
#[derive(Debug, Clone)]
pub struct ConfigTree {
    root: Mapping,
    /// The files read, in merge order: bases first, the `-c` file last.
    files: Vec<ConfigFile>,
    /// Applied overrides: (key path segments, override text as written).
    overrides: Vec<(Vec<String>, String)>,
}

/// Reads the optional `-c` file (and the `_base_` files it inherits from) and applies the `-o`
/// overrides in order (a later override of the same key wins). Each override's value is parsed
/// as a YAML scalar or flow value (`100`, `1e-4`, `true`, `'str'`, `[1, 2]`); an empty value
/// means null (the default).
pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<ConfigTree, ConfigError> {
    let mut tree = match path {
        Some(path) => ConfigTree::from_file(path)?,
        None => ConfigTree {
            root: Mapping::new(),
            files: Vec::new(),
            overrides: Vec::new(),
        },
    };
    for text in overrides {
        tree.apply_override(text)?;
    }
    Ok(tree)
}

/// The top-level mapping of one file's YAML text (empty for an empty document).
fn parse_mapping(text: &str, path: &Path) -> Result<Mapping, ConfigError> {
    let value: Value = crate::yaml::from_str(text).map_err(|e| ConfigError::Yaml {
        path: path.to_path_buf(),
        line: e.line(),
        message: e.message(),
    })?;
    match value {
        Value::Mapping(m) => Ok(m),
        Value::Null => Ok(Mapping::new()),
        other => Err(ConfigError::NotAMapping {
            path: path.to_path_buf(),
            found: kind(&other),
        }),
    }
}

/// `over` merged into `into`: mappings key by key (recursively), anything else replaced.
fn merge(into: &mut Mapping, over: Mapping) {
    for (key, value) in over {
        match value {
            Value::Mapping(m) => match into.get_mut(&key) {
                Some(Value::Mapping(existing)) => merge(existing, m),
                _ => {
                    into.insert(key, Value::Mapping(m));
                }
            },
            other => {
                into.insert(key, other);
            }
        }
    }
}

/// `a.yaml → b.yaml → …` for messages.
fn chain_text(chain: &[PathBuf]) -> String {
    chain
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" → ")
}

/// Reads `path` (whose text is `text`) over its `_base_` files, depth-first; `chain` holds
/// the files from the `-c` file down to `path` (for loops and depth), `files` collects every
/// file read in merge order. Returns the merged mapping.
fn read_layer(
    path: &Path,
    text: String,
    chain: &mut Vec<PathBuf>,
    files: &mut Vec<ConfigFile>,
) -> Result<Mapping, ConfigError> {
    let mut own = parse_mapping(&text, path)?;
    let mut merged = Mapping::new();
    if let Some(bases) = own.remove("_base_") {
        let line = line_in_text(&text, &["_base_".to_string()]);
        let at = |message: String| ConfigError::Base {
            path: path.to_path_buf(),
            line,
            message,
        };
        let names: Vec<String> = match bases {
            Value::Null => Vec::new(),
            Value::String(s) => vec![s],
            Value::Sequence(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s),
                    other => Err(at(format!(
                        "a list entry is a {}, not a path to a YAML file",
                        kind(&other)
                    ))),
                })
                .collect::<Result<_, _>>()?,
            other => {
                return Err(at(format!(
                    "is a {}; give a path to a YAML file (relative to this file) or a list of them",
                    kind(&other)
                )))
            }
        };
        for name in names {
            let base: PathBuf = match Path::new(&name) {
                p if p.is_absolute() => p.to_path_buf(),
                p => path.parent().unwrap_or(Path::new("")).join(p),
            }
            .components()
            .filter(|c| *c != std::path::Component::CurDir)
            .collect();
            let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            let target = canonical(&base);
            if chain.iter().any(|p| canonical(p) == target) {
                let mut looped = chain.clone();
                looped.push(base);
                return Err(at(format!("`{name}` loops back: {}", chain_text(&looped))));
            }
            if chain.len() > MAX_BASE_DEPTH {
                let mut deep = chain.clone();
                deep.push(base);
                return Err(at(format!(
                    "the chain is deeper than {MAX_BASE_DEPTH} bases: {}",
                    chain_text(&deep)
                )));
            }
            // A base is a regular file: a FIFO or a device named here is refused, never read.
            let base_text =
                crate::files::read_to_string_at_most(&base, MAX_CONFIG_BYTES).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        at(format!(
                            "`{name}`: no such file {} (paths are relative to this file)",
                            base.display()
                        ))
                    } else {
                        at(format!("`{name}`: cannot read {}: {e}", base.display()))
                    }
                })?;
            chain.push(base.clone());
            let layer = read_layer(&base, base_text, chain, files)?;
            chain.pop();
            merge(&mut merged, layer);
        }
    }
    files.push(ConfigFile {
        path: path.to_path_buf(),
        text,
        root: own.clone(),
    });
    merge(&mut merged, own);
    Ok(merged)
}

/// How many leading segments of `path` `root` holds (following mappings).
fn depth_in(root: &Mapping, path: &[String]) -> usize {
    let mut node = root;
    for (i, segment) in path.iter().enumerate() {
        match node.get(segment.as_str()) {
            Some(Value::Mapping(m)) => node = m,
            Some(_) => return i + 1,
            None => return i,
        }
    }
    path.len()
}

impl ConfigTree {
    /// Parses a config from YAML text; `path` names it in messages and is where its `_base_`
    /// paths are resolved from.
    pub fn from_str(text: &str, path: &Path) -> Result<ConfigTree, ConfigError> {
        let mut files = Vec::new();
        let root = read_layer(
            path,
            text.to_string(),
            &mut vec![path.to_path_buf()],
            &mut files,
        )?;
        Ok(ConfigTree {
            root,
            files,
            overrides: Vec::new(),
        })
    }

    fn from_file(path: &Path) -> Result<ConfigTree, ConfigError> {
        // A regular file of a sane size: a FIFO would block, `/dev/zero` never ends.
        let text =
            modelzoo_support::input::read_to_string_bounded(path, MAX_CONFIG_BYTES, "config file")
                .map_err(|e| ConfigError::Read {
                    path: path.to_path_buf(),
                    error: e.into_io_reason(),
                })?;
        ConfigTree::from_str(&text, path)
    }

    /// The `-c` file, if any.
    pub fn file(&self) -> Option<&Path> {
        self.files.last().map(|f| f.path.as_path())
    }

    /// Where the `-c` file ends (see [`FileEnd`]); `None` without a file.
    pub fn file_end(&self) -> Option<FileEnd> {
        let file = self.files.last()?;
        let mut line = 0;
        let mut section = None;
        let mut last_section = None;
        for (i, text) in file.text.lines().enumerate() {
            let content = text.trim_start();
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            if content.len() == text.len() {
                // A top-level line: `Key:` opens a section.
                last_section = content
                    .split_once(':')
                    .map(|(k, _)| k.trim().trim_matches(|c| c == '"' || c == '\'').to_string());
            }
            line = i + 1;
            section.clone_from(&last_section);
        }
        Some(FileEnd {
            path: file.path.clone(),
            line,
            section,
        })
    }

    /// The merged value at `path` (`["Engine", "max_steps"]`), overrides applied.
    pub fn get(&self, path: &[&str]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        let mut node = self.root.get(*first)?;
        for segment in rest {
            node = match node {
                Value::Mapping(m) => m.get(*segment)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// Whether `path` holds a value that is not empty (null): given, not left to the default.
    pub fn is_set(&self, path: &[&str]) -> bool {
        self.get(path).is_some_and(|v| !v.is_null())
    }

    /// Where the value at `path` came from (see [`Origin`]), for messages.
    pub fn origin(&self, path: &[&str]) -> Origin {
        let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        self.origin_of(&path)
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
    /// for a mapping an override created), else the file that set it (the `-c` file or a
    /// base: the one holding most of the path, the later one on a tie), else the defaults.
    fn origin_of(&self, path: &[String]) -> Origin {
        let hit = self.overrides.iter().rev().find(|(key, _)| {
            let n = key.len().min(path.len());
            key[..n] == path[..n]
        });
        if let Some((_, text)) = hit {
            return Origin::Override(text.clone());
        }
        let mut best: Option<(usize, &ConfigFile)> = None;
        for file in self.files.iter().rev() {
            let depth = depth_in(&file.root, path);
            if best.is_none_or(|(d, _)| depth > d) {
                best = Some((depth, file));
            }
        }
        match best {
            Some((depth, file)) => Origin::File {
                path: file.path.clone(),
                line: line_in_text(&file.text, path)
                    .or_else(|| line_in_text(&file.text, &path[..depth])),
            },
            None => Origin::Defaults,
        }
    }
}

/// Best-effort line of `path` in YAML `text`, following block-style indentation (enough for
/// the configs people write; `None` when the key cannot be found, e.g. flow style).
fn line_in_text(text: &str, path: &[String]) -> Option<usize> {
    if path.is_empty() {
        return None;
    }
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

/// What a model's mixed precision does with one Paddle op that `custom_black_list` (keep it
/// in fp32) or `custom_white_list` (run it in float16 / bfloat16) may name. A model states
/// its table; [`MixPrecision::check_lists`] holds the lists against it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AmpOp {
    /// The Paddle op name (`reduce_sum`).
    pub name: &'static str,
    /// Whether the model runs it in the low-precision dtype under AMP (`false`: in fp32).
    pub low_precision: bool,
    /// Where the op is in the model and what AMP does with it (for messages and docs).
    pub what: &'static str,
}

/// A `custom_black_list` / `custom_white_list` entry [`MixPrecision::check_lists`] refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("Engine.mix_precision.{list}: `{name}`: {reason}")]
pub struct AmpListError {
    /// `custom_black_list` or `custom_white_list`.
    pub list: &'static str,
    /// The op as written.
    pub name: String,
    /// Why, and what to do.
    pub reason: String,
}

impl MixPrecision {
    /// Checks `custom_black_list` / `custom_white_list` against what the model does (`table`),
    /// so a list is applied or refused, never ignored. With AMP on (`amp`) a listed op must
    /// already run in the precision its list asks for — then the entry is applied by
    /// construction; an op the table runs otherwise, a name it does not know, or a name in both
    /// lists is an error naming the op and what to do. With AMP off the lists change nothing
    /// (as in Paddle), but every name must still be one the table knows.
    pub fn check_lists(&self, amp: bool, table: &[AmpOp]) -> Result<(), AmpListError> {
        for name in &self.custom_black_list {
            if self.custom_white_list.contains(name) {
                return Err(AmpListError {
                    list: "custom_white_list",
                    name: name.clone(),
                    reason: "it is in custom_black_list too; keep it in one list".into(),
                });
            }
        }
        let lists = [
            ("custom_black_list", &self.custom_black_list, false),
            ("custom_white_list", &self.custom_white_list, true),
        ];
        for (list, names, low) in lists {
            for name in names {
                let refuse = |reason: String| AmpListError {
                    list,
                    name: name.clone(),
                    reason,
                };
                let Some(op) = table.iter().find(|op| op.name == name.as_str()) else {
                    let known: Vec<&str> = table.iter().map(|op| op.name).collect();
                    return Err(refuse(if known.is_empty() {
                        "this model keeps no per-op precision lists (its mixed precision is libtorch autocast's own); remove the entry".into()
                    } else {
                        format!(
                            "not an op this model's mixed precision can place (it knows {}); remove the entry",
                            known.join(", ")
                        )
                    }));
                };
                if amp && op.low_precision != low {
                    let (asked, runs) = if low {
                        ("float16 / bfloat16", "fp32")
                    } else {
                        ("fp32", "the AMP dtype")
                    };
                    return Err(refuse(format!(
                        "asks for {asked}, but under AMP it runs in {runs}: {}; remove it from {list}",
                        op.what
                    )));
                }
            }
        }
        Ok(())
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
