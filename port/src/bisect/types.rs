//! What a bisection is asked (its options and rule), what it finds (its trials and report)
//! and how that is said: the types the search, the trials and the glue share.

use std::path::PathBuf;
use std::time::Duration;

use modelzoo_support::kit::Kit;
use serde::Serialize;

use crate::{steps, PortError};

/// Why a bisection could not run (exit 2), or was interrupted (exit 130).
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    #[error(transparent)]
    Port(#[from] PortError),
    #[error("interrupted")]
    Interrupted,
}

/// The runtime's variable: the ops to run on the CPU, separated by commas.
pub const FALLBACK_ENV: &str = "TORCH_SDAA_FALLBACK_OPS";
/// The emulator's op inventory directory variable.
pub(super) const INVENTORY_ENV: &str = "SDAA_EMULATOR_OP_INVENTORY";
/// The report bisect writes into its work directory.
pub const JSON_FILE: &str = "bisect.json";

/// How a trial is judged against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The port's step rule (port/src/steps.rs): every step within float noise of an fp32 CPU
    /// baseline; a trial stops at its first step past the tolerance.
    Step,
    /// The ModelZoo's 1% rule on the final loss (validator::compare): judged at the end.
    Rel1,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::Step => "step-by-step",
            Rule::Rel1 => "1% rule",
        }
    }
}

/// What `modelzoo bisect` is asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The baseline's log (any format the loss reader knows).
    pub baseline: PathBuf,
    /// The command, run as is (no shell) in each trial's directory.
    pub command: Vec<String>,
    /// None: the step rule for an fp32 CPU baseline (or one that does not say), else the 1% rule.
    pub rule: Option<Rule>,
    pub max_runs: Option<usize>,
    pub time_budget: Option<Duration>,
    /// Copied into each trial's directory, where the command runs; None: an empty directory.
    pub src: Option<PathBuf>,
    /// Where the trials and the report go.
    pub work: PathBuf,
    /// The log the command writes (relative to its directory), when the losses are not in its
    /// console output.
    pub log: Option<PathBuf>,
    /// The loss metric to judge, when the log prints several.
    pub loss_key: Option<String>,
    /// Longest one trial may take.
    pub timeout: Duration,
    pub kit: Option<Kit>,
    /// Set in every trial's environment besides the kit's own.
    pub extra_env: Vec<(String, String)>,
}

/// How a bisection ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// A set whose fallback makes the run match; `minimal` is false when a budget stopped the
    /// search first (the best set so far: it matches, but may hold ops that are not needed).
    Found { ops: Vec<String>, minimal: bool },
    /// The run matches the baseline without any fallback.
    NothingToBisect,
    /// Falling back every candidate still does not match: the script itself computes something
    /// else on the device.
    DeviceOnlyBug,
    /// The budget ran out before any set was seen to match.
    BudgetSpent,
}

/// One trial.
#[derive(Debug, Clone, Serialize)]
pub struct Trial {
    pub fallback: Vec<String>,
    pub matched: bool,
    /// Why it does not match (the first step past the tolerance, a crash, …).
    pub why: String,
    /// Stopped as soon as its verdict was known.
    pub cut_short: bool,
    pub seconds: f64,
    pub dir: PathBuf,
    pub console: PathBuf,
}

/// What `modelzoo bisect` found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub outcome: Outcome,
    pub rule: Rule,
    pub metric: String,
    pub candidates: Vec<String>,
    pub runs: usize,
    pub seconds: f64,
    /// Why the search stopped early (`--max-runs`, `--time-budget`), when it did.
    pub stopped: Option<String>,
    pub trials: Vec<Trial>,
    pub summary: String,
}

impl Report {
    /// 0: a set found; 1: nothing to bisect, a device-only bug, or no set within the budget.
    pub fn exit_code(&self) -> u8 {
        match self.outcome {
            Outcome::Found { .. } => 0,
            _ => 1,
        }
    }
}

/// The environment line that applies `ops` (names without `aten::`, as the runtime takes them).
pub fn env_line(ops: &[String]) -> String {
    let names: Vec<&str> = ops
        .iter()
        .map(|op| op.strip_prefix("aten::").unwrap_or(op))
        .collect();
    format!("{FALLBACK_ENV}={}", names.join(","))
}

/// The baseline's loss series and the rule it calls for.
pub(super) struct Baseline {
    pub(super) series: steps::Series,
    pub(super) metric: String,
    pub(super) rule: Rule,
}
