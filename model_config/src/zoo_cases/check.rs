//! The rules on one case ([`CaseCheck`]), each violation at the line of what breaks it.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use serde_yaml::Value;

use super::locate::Locator;
use super::raw::{explain, scalar, Field, RawCase};
use super::schema::{
    CaseKind, Flag, Invocation, Scalar, ScalarKind, Violation, ZooCase, REQUIRED_PARAMS,
    RUN_DIR_PREFIXES, RUN_FILE_PREFIX,
};

/// The checks of one case, collecting its violations.
pub(super) struct CaseCheck<'a> {
    pub lines: &'a Locator<'a>,
    pub start: usize,
    pub end: usize,
    pub index: usize,
    pub name: Option<String>,
    pub violations: Vec<Violation>,
}

impl CaseCheck<'_> {
    pub fn line(&self, path: &[&str]) -> usize {
        self.lines.find(self.start, self.end, path)
    }

    pub fn fail(&mut self, path: &[&str], rule: &'static str, message: String) {
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
    pub fn required(&mut self, path: &[&str], field: &Field) -> Option<Scalar> {
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

    /// `case_name`: given, unique in the file, a plain name.
    pub fn case_name(
        &mut self,
        field: &Field,
        seen: &mut HashMap<String, usize>,
    ) -> Option<Scalar> {
        let case_name = self.required(&["case_name"], field);
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
        case_name
    }

    /// The case's name, for the messages, even when the rest of it does not deserialize.
    pub(super) fn note_name(&mut self, item: &Value) {
        if let Some(s) = item.get("case_name").and_then(|v| scalar(v).ok().flatten()) {
            self.name = Some(s.text);
        }
    }

    /// `value` (found under the keys `at`) as a `T`; None, with a `zoo-case.format` violation
    /// at the key that failed, when it is not one.
    pub(super) fn deserialize<T: serde::de::DeserializeOwned>(
        &mut self,
        value: &Value,
        at: &[&str],
    ) -> Option<T> {
        match serde_path_to_error::deserialize(value.clone()) {
            Ok(raw) => Some(raw),
            Err(err) => {
                let mut path: Vec<String> = at.iter().map(|k| k.to_string()).collect();
                path.extend(err.path().iter().filter_map(|s| match s {
                    serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                    _ => None,
                }));
                let refs: Vec<&str> = path.iter().map(String::as_str).collect();
                let message = explain(&err.into_inner().to_string(), &path);
                self.fail(&refs, "zoo-case.format", message);
                None
            }
        }
    }

    /// The rules of a training case; the case when it is complete enough to name.
    pub fn case(
        &mut self,
        item: &Value,
        root: Option<&Path>,
        seen: &mut HashMap<String, usize>,
    ) -> Option<ZooCase> {
        self.note_name(item);
        let raw: RawCase = self.deserialize(item, &[])?;
        let case_name = self.case_name(&raw.case_name, seen);
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
        let run_dir_ok = run_dir.as_ref().is_some_and(|d| {
            self.check_run_dir(&["desc", "run_dir"], &d.text, root, RUN_DIR_PREFIXES)
        });
        if let Some(file) = &run_file {
            self.check_run_file(
                &["desc", "run_file"],
                &file.text,
                Some(RUN_FILE_PREFIX),
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
                    others = self.others(&["params"], REQUIRED_PARAMS, v);
                }
            }
        }
        let run_file = run_file?.text;
        let flags = params
            .iter()
            .map(|(name, value)| self.flag(&["params", name], name, value))
            .chain(
                others
                    .iter()
                    .map(|(name, value)| self.flag(&["params", "others", name], name, value)),
            )
            .collect();
        Some(ZooCase {
            case_name: case_name?.text,
            line: self.start + 1,
            run_dir: run_dir?.text,
            invocations: vec![Invocation {
                stage: None,
                run_file: run_file.clone(),
                line: self.line(&["desc", "run_file"]),
                flags,
            }],
            run_file,
            params,
            others,
            kind: CaseKind::Training,
        })
    }

    /// `--name value`, at the line of `path`.
    pub fn flag(&self, path: &[&str], name: &str, value: &Scalar) -> Flag {
        Flag {
            name: name.to_string(),
            value: value.clone(),
            line: self.line(path),
        }
    }

    /// Prefix, inside the root, an existing directory; true when it is usable.
    pub fn check_run_dir(
        &mut self,
        path: &[&str],
        run_dir: &str,
        root: Option<&Path>,
        prefixes: &[&str],
    ) -> bool {
        if !prefixes.iter().any(|p| run_dir.starts_with(p)) {
            let example = if prefixes == RUN_DIR_PREFIXES {
                "PyTorch/contrib/Classification/Demo"
            } else {
                "TecoInference/contrib/detection/ssd"
            };
            self.fail(
                path,
                "zoo-case.run-dir",
                format!(
                    "`run_dir: {run_dir}` must start with {}: the model directory relative to the zoo root (e.g. {example})",
                    prefixes.join(" or ")
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
    pub fn check_run_file(
        &mut self,
        path: &[&str],
        run_file: &str,
        prefix: Option<&str>,
        dir: Option<&Path>,
    ) {
        if prefix.is_some_and(|p| !run_file.starts_with(p)) {
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

    /// `others` under `base` (`params`, or `<stage>.params`): flag names to single values, none
    /// of them one of `reserved` (the parameters set beside it).
    pub fn others(
        &mut self,
        base: &[&str],
        reserved: &[&str],
        value: &Value,
    ) -> Vec<(String, Scalar)> {
        let path_buf: Vec<&str> = base.iter().copied().chain(["others"]).collect();
        let path = path_buf.as_slice();
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
            let at: Vec<&str> = path.iter().copied().chain([name.as_str()]).collect();
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
            if reserved.contains(&name.as_str()) {
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
