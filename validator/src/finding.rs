//! What a check reports: a [`Finding`], a model directory's [`DirReport`] and the loss pairs
//! the review compared. The layout rules, the review and the renderers all speak these types,
//! so they live below all three (no module has to import another to name a finding).

use std::path::PathBuf;

use serde::Serialize;

use crate::rules::{severity_of, Severity};

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
    pub compared: Vec<LossPair>,
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

/// Where a compared pair's values come from.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PairSource {
    /// A CUDA log and an SDAA log.
    Logs { cuda: PathBuf, sdaa: PathBuf },
    /// One file with `=== CUDA ===` / `=== SDAA ===` rows (the build-in models' `*_loss.txt`).
    Combined { file: PathBuf },
}

/// A CUDA/SDAA pair the review compared, with what the ModelZoo rule gives on it.
#[derive(Debug, Clone, Serialize)]
pub struct LossPair {
    #[serde(flatten)]
    pub source: PairSource,
    /// How the values were read: `loss.py` (its regexes) or `log reader` (train.loss, rank 0).
    pub read_as: &'static str,
    pub cuda_values: usize,
    pub sdaa_values: usize,
    /// Steps compared (the shorter series).
    pub steps: usize,
    pub mean_relative_error: f64,
    pub mean_absolute_error: f64,
    pub pass: bool,
}
