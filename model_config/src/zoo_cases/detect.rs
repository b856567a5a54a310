//! Which model.yaml schema a text is in ([`detect`]), and its YAML error ([`yaml_error`]).

use serde_yaml::Value;

/// Which model.yaml schema a text is in, told by its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexFormat {
    /// This repository's: a mapping with `models:` ([`crate::ModelYaml`]); also an empty file.
    ModelYaml,
    /// The public ModelZoo's: a list of mappings with `case_name` ([`ZooCases`](super::ZooCases)).
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
