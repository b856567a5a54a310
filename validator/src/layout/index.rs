//! The model.yaml index `model-yaml.entry` checks a directory against.

use std::fs;
use std::path::{Path, PathBuf};

use model_config::model_yaml::ModelYaml;
use model_config::zoo_cases::{self, IndexFormat};

use super::LayoutError;

/// The model names and directories a model.yaml lists (what `model-yaml.entry` needs), read
/// with `model_config`'s loader.
#[derive(Debug, Clone, Default)]
pub struct ModelIndex {
    pub path: PathBuf,
    names: Vec<String>,
    dirs: Vec<PathBuf>,
}

impl ModelIndex {
    /// Load a model.yaml: this repository's schema with `model_config`'s loader; the public
    /// ModelZoo's case list (told apart by its shape) for each case's `desc.run_dir` and
    /// `params.model_name`. A file the typed loader rejects but that still lists entries with
    /// `name`/`path` (another zoo's schema) is used for its names and paths, with a warning;
    /// anything else is an error naming the file. Only a regular file is read: a FIFO is an
    /// error naming it, never a read that blocks.
    pub fn load(path: &Path) -> Result<ModelIndex, LayoutError> {
        let broken = |message: String| LayoutError::ModelYaml {
            path: path.to_path_buf(),
            message,
        };
        let text = model_config::files::read_to_string_at_most(path, super::MAX_INDEX_BYTES)
            .map_err(|e| broken(format!("cannot read: {e}")))?;
        let (names, dirs): (Vec<String>, Vec<PathBuf>) = if zoo_cases::detect(&text)
            == Ok(IndexFormat::ZooCases)
        {
            case_entries(&text, path).ok_or_else(|| {
                broken(zoo_cases::yaml_error(&text).unwrap_or_else(|| {
                    "no case lists a `desc.run_dir`, `run_dir` or `params.model_name`".into()
                }))
            })?
        } else {
            match ModelYaml::parse(&text, path) {
                Ok(yaml) => yaml
                    .models
                    .iter()
                    .map(|m| (m.name.clone(), yaml.model_dir(m)))
                    .unzip(),
                Err(typed) => match lenient_entries(&text, path) {
                    Some(entries) => {
                        tracing::warn!(
                                "{}: not in this repository's model.yaml schema ({typed}); using only its entries' names and paths",
                                path.display()
                            );
                        entries
                    }
                    None => return Err(broken(typed.to_string())),
                },
            }
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
    pub(super) fn has_entry(&self, dir: &Path, model_names: &[String]) -> bool {
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
fn lenient_entries(text: &str, path: &Path) -> Option<(Vec<String>, Vec<PathBuf>)> {
    // Through model_config's depth guard: this runs right after the typed loader refused the
    // file, which may be because it is nested too deep for serde_yaml to reject quickly.
    let value: serde_yaml::Value = model_config::yaml::from_str(text).ok()?;
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

/// `params.model_name` and `<zoo root>/<desc.run_dir>` (a TecoInference case's top-level
/// `run_dir`) of each case of a ModelZoo case file, read leniently (a case that breaks a
/// `zoo-case.*` rule still names its model: that rule is reported on the case file itself, not
/// as a missing entry here).
fn case_entries(text: &str, path: &Path) -> Option<(Vec<String>, Vec<PathBuf>)> {
    let value: serde_yaml::Value = model_config::yaml::from_str(text).ok()?;
    let root = zoo_cases::zoo_root(path);
    let (mut names, mut dirs) = (Vec::new(), Vec::new());
    for case in value.as_sequence()? {
        let name = case
            .get("params")
            .and_then(|p| p.get("model_name"))
            .and_then(|v| v.as_str());
        // A training case's `desc.run_dir`; a TecoInference case's `run_dir` is at its top.
        let run_dir = case
            .get("desc")
            .and_then(|d| d.get("run_dir"))
            .or_else(|| case.get("run_dir"))
            .and_then(|v| v.as_str());
        if name.is_none() && run_dir.is_none() {
            continue;
        }
        names.push(name.unwrap_or_default().to_string());
        dirs.push(match (&root, run_dir) {
            (Some(root), Some(d)) => root.join(d),
            _ => PathBuf::new(),
        });
    }
    (!names.is_empty()).then_some((names, dirs))
}

fn normalise_name(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}
