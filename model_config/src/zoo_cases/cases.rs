//! A case file read and checked ([`ZooCases`]), and where its zoo root is.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_yaml::Value;

use super::check::CaseCheck;
use super::detect::yaml_error;
use super::inference;
use super::locate::Locator;
use super::schema::{Violation, ZooCase, FILE_IN_ZOO, INFERENCE_FILE_IN_ZOO, ZOO_ROOT_DIRS};

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
                    "no directory above {} holds PyTorch/, PaddlePaddle/ or TecoInference/, so \
                     run_dir cannot be resolved: keep the file at <zoo root>/{FILE_IN_ZOO} (a \
                     TecoInference case file at <zoo root>/{INFERENCE_FILE_IN_ZOO})",
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
            let case = if inference::is_inference(item) {
                check.inference_case(item, root.as_deref(), &mut seen)
            } else {
                check.case(item, root.as_deref(), &mut seen)
            };
            if let Some(case) = case {
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
/// `PyTorch/`, `PaddlePaddle/` or `TecoInference/` (for `<zoo>/PyTorch/contrib/model_config/model.yaml`,
/// `<zoo>`).
pub fn zoo_root(file: &Path) -> Option<PathBuf> {
    let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let dir = file.parent()?;
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .find(|a| ZOO_ROOT_DIRS.iter().any(|d| a.join(d).is_dir()))
        .map(Path::to_path_buf)
}

/// The case file of a zoo root, when `dir` is one: `dir/PyTorch/contrib/model_config/model.yaml`
/// exists (whatever it is: a FIFO there is reported, not skipped).
pub fn case_file_of(dir: &Path) -> Option<PathBuf> {
    let file = dir.join(FILE_IN_ZOO);
    std::fs::symlink_metadata(&file).is_ok().then_some(file)
}

/// Every case file of a zoo root that exists, training then TecoInference
/// ([`FILE_IN_ZOO`], [`INFERENCE_FILE_IN_ZOO`]).
pub fn case_files_of(dir: &Path) -> Vec<PathBuf> {
    [FILE_IN_ZOO, INFERENCE_FILE_IN_ZOO]
        .iter()
        .map(|f| dir.join(f))
        .filter(|f| std::fs::symlink_metadata(f).is_ok())
        .collect()
}
