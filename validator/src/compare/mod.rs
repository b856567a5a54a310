//! `modelzoo compare`: does the candidate (SDAA) run match the baseline (CUDA) run?
//!
//! Both logs are streamed through `dllogger`'s reader (any format it knows); only the selected
//! metric's values for the selected rank are kept — 8 bytes a value, the keys as runs
//! ([`Steps`]) — plus the last value of every `val.*` / `val_*` metric and what the log's
//! PARAMETER records say about the run. Steps are paired by (epoch, iteration) — the n-th
//! occurrence of a key in one log with the n-th in the other — or by position
//! (`Align::Order`), streaming; steps present in only one log are counted and listed as ranges.
//!
//! A comparison cannot pass a broken run: when the shorter run covers less than
//! [`Options::min_coverage`] of the longer it fails unless partial runs are allowed
//! ([`Options::allow_partial`]); a zero final value is judged by an absolute rule
//! ([`ZERO_FINAL_ABS_TOL`]) rather than a NaN relative error, and a baseline that is 0 at
//! every step is refused; comparing a file with itself is flagged; the runs' configurations
//! are compared ([`RunConfig`]); and under `modelzoo-loss` the output says when loss.py's own
//! extraction would read the logs differently ([`crate::losspy`]).
//!
//! Given a second baseline run (another seed, [`Options::noise`]), the comparison also says
//! whether the candidate deviates from the baseline more than that run does: the noise floor
//! ([`NoiseFloor`]), reported beside the rule's verdict and gating it only under
//! [`Options::noise_gate`].
//!
//! Given several runs a side ([`compare_runs`]), the verdict is Welch's one-sided t-test on
//! the runs' final values, with the per-pair rule beside it.

mod detection;
mod facts;
mod figures;
mod glob;
mod losspy_check;
mod next_steps;
mod noise;
mod pairing;
pub mod plot;
mod read;
pub mod report;
mod runs;
mod runs_report;
mod stats;
mod steps;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use crate::losspy;
use figures::gate_coverage;
use losspy_check::losspy_check;
use next_steps::next_steps;
use noise::noise_floor;
use pairing::{match_numbering, pair_by_key, pair_by_order, renumber_like_baseline};

pub use detection::{is_map_metric, map_allowance, map_passes, MAP_ABS_FLOOR, MAP_REL_TOL};
pub use facts::{lines as config_lines, run_config, same_value, FactDiff, RunConfig};
pub use figures::{counted, coverage_pct, figures, pct, verdict, Coverage};
pub use glob::expand_glob;
pub use read::{
    compare_files, is_training_loss, read_series, read_series_of_first, same_file, DEFAULT_METRIC,
    METRIC_FALLBACKS,
};
pub use runs::{
    compare_runs, declared_goal, welch, Goal, PairVerdict, RunFinal, RunsComparison, Side,
    WelchTest, ALPHA, MIN_RUNS,
};
pub use runs_report::{runs_json, runs_markdown, runs_text, verdict_line, write_runs_report};
pub use stats::{spread, student_t_sf, welch_df, Spread};
pub use steps::{KeySeq, Keyed, Pairs, Steps};

/// How steps of the two logs are paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Align {
    /// By (epoch, iteration, validation iteration) and occurrence.
    Key,
    /// By position: the i-th value of one log with the i-th of the other (loss.py's way).
    Order,
}

/// The pass/fail rule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Rule {
    /// Adaptation guide §3.5: |relative error of the final value| ≤ threshold (0.01 = 1%).
    Rel1 { threshold: f64 },
    /// ModelZoo run_scripts/loss.py: series cut to the shorter, paired by position; pass when
    /// mean((c-b)/b) ≤ 0.05 or mean(c-b) ≤ 0.0002 (signed means).
    ModelzooLoss,
}

impl Rule {
    /// The rule's name as given to `--rule`.
    pub fn name(&self) -> &'static str {
        match self {
            Rule::Rel1 { .. } => "rel1",
            Rule::ModelzooLoss => "modelzoo-loss",
        }
    }
}

/// loss.py's thresholds, reproduced exactly.
pub const MODELZOO_LOSS_MEAN_REL: f64 = 0.05;
pub const MODELZOO_LOSS_MEAN_DIFF: f64 = 0.0002;

/// rel1 when the baseline's final value is exactly 0: the relative error is undefined (0/0 or
/// x/0), so the rule passes when |candidate final − baseline final| ≤ this absolute tolerance.
/// A loss or metric that ends at exactly 0 is at most float32 rounding away from 0 on another
/// device (~1e-7 relative to the values it sums); 1e-6 allows that and nothing a user would
/// see in a printed figure.
pub const ZERO_FINAL_ABS_TOL: f64 = 1e-6;

/// Default noise factor: the candidate is within run-to-run variation when its mean |relative
/// deviation| from the baseline is at most this many times the noise run's. A candidate that
/// is just another seed is exchangeable with the noise run, so it exceeds a factor of 1 about
/// half the time; 2 leaves room for that sampling spread of one noise run while a port that is
/// off by more than twice seed-to-seed variation is reported.
pub const NOISE_FACTOR: f64 = 2.0;

/// Default least share of the longer run the compared steps must cover. Two complete runs of
/// one short-training schedule can log a few steps apart (a CUDA run of 105 steps against an
/// SDAA run of 101 is 96%); a run that stopped early is far below (1 step of 100 is 1%).
pub const DEFAULT_MIN_COVERAGE: f64 = 0.95;

/// What to compare and how.
#[derive(Debug, Clone)]
pub struct Options {
    pub metric: String,
    /// When `metric` is the default [`DEFAULT_METRIC`] and a log has none, use the first of
    /// [`METRIC_FALLBACKS`] it has (said in the output). Off: `metric` or nothing.
    pub metric_fallback: bool,
    pub rank: u32,
    pub align: Align,
    /// The final value is the mean of the last `tail` paired steps.
    pub tail: usize,
    pub rule: Rule,
    /// Least share of the longer run's steps the compared steps must be (0.95 = 95%).
    pub min_coverage: f64,
    /// Judge runs whose compared steps cover less than `min_coverage` of the longer run (a run
    /// stopped early) on the steps compared. Off by default: they fail.
    pub allow_partial: bool,
    /// A second baseline run (same device and configuration, another seed): measure the
    /// run-to-run variation the candidate is judged against.
    pub noise: Option<PathBuf>,
    /// Within run-to-run variation: candidate deviation ≤ `noise_factor` × noise deviation.
    pub noise_factor: f64,
    /// Let the noise verdict decide pass/fail too (a candidate beyond the noise floor, or a
    /// floor that cannot be measured, fails). Off: the noise verdict is reported only.
    pub noise_gate: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            metric: DEFAULT_METRIC.into(),
            metric_fallback: true,
            rank: 0,
            align: Align::Key,
            tail: 10,
            rule: Rule::Rel1 { threshold: 0.01 },
            min_coverage: DEFAULT_MIN_COVERAGE,
            allow_partial: false,
            noise: None,
            noise_factor: NOISE_FACTOR,
            noise_gate: false,
        }
    }
}

const NONE: u64 = u64::MAX;

/// Where a value sits in training: epoch, iteration, validation iteration, occurrence of that
/// triple so far. Absent parts are stored as `u64::MAX` to keep points small.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    parts: [u64; 3],
    occurrence: u32,
}

impl Key {
    pub fn epoch(&self) -> Option<u64> {
        (self.parts[0] != NONE).then_some(self.parts[0])
    }
    pub fn iteration(&self) -> Option<u64> {
        (self.parts[1] != NONE).then_some(self.parts[1])
    }
    pub fn val_iteration(&self) -> Option<u64> {
        (self.parts[2] != NONE).then_some(self.parts[2])
    }
    fn new(epoch: Option<u64>, iteration: Option<u64>, val_iteration: Option<u64>) -> Key {
        Key {
            parts: [
                epoch.unwrap_or(NONE),
                iteration.unwrap_or(NONE),
                val_iteration.unwrap_or(NONE),
            ],
            occurrence: 0,
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(e) = self.epoch() {
            parts.push(format!("epoch {e}"));
        }
        if let Some(i) = self.iteration() {
            parts.push(format!("iteration {i}"));
        }
        if let Some(v) = self.val_iteration() {
            parts.push(format!("val iteration {v}"));
        }
        if parts.is_empty() {
            parts.push("unnumbered step".into());
        }
        if self.occurrence > 0 {
            parts.push(format!("(occurrence {})", self.occurrence + 1));
        }
        f.write_str(&parts.join(" "))
    }
}

impl Serialize for Key {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Key", 4)?;
        st.serialize_field("epoch", &self.epoch())?;
        st.serialize_field("iteration", &self.iteration())?;
        st.serialize_field("val_iteration", &self.val_iteration())?;
        st.serialize_field("occurrence", &self.occurrence)?;
        st.end()
    }
}

/// One value of the selected metric.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub key: Key,
    pub value: f64,
}

/// What was read from one log.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub path: PathBuf,
    /// The metric read: the one asked for, or the default's fallback this log has.
    pub metric: String,
    /// Why the metric is not the one asked for (the default fell back), when it is not.
    pub metric_note: Option<String>,
    #[serde(skip)]
    pub steps: Steps,
    /// Values of the selected metric for the selected rank.
    pub values: usize,
    /// Last value of each `val.*` / `val_*` metric for the selected rank.
    pub eval_last: BTreeMap<String, f64>,
    /// What the log says about its run: its PARAMETER entries and the `FINISHED` event's
    /// `steps`, `world_size`, `num_params` (key → value as written).
    pub facts: BTreeMap<String, String>,
    /// Metric names seen for the selected rank (for "metric absent" errors).
    pub metrics_seen: Vec<String>,
    /// Ranks seen in the log.
    pub ranks_seen: Vec<u32>,
    pub lines: u64,
    pub records: u64,
    pub malformed: u64,
    pub bytes: u64,
    /// Lines over the reader's 1 MiB line limit (read from the text after their last `\r`).
    pub overlong_lines: u64,
    /// Of those, lines whose text after the last `\r` was still over the limit: not read.
    pub overlong_unread: u64,
    /// What loss.py would read from this log (only under the modelzoo-loss rule).
    #[serde(skip)]
    pub losspy: Option<losspy::Extraction>,
    /// With the default metric, in a log with none of it nor its fallbacks: the named losses
    /// of one line after the first (`metric`), each with its series (`Loss_G` after
    /// `Loss_D`). Each is compared; the verdict is the worst.
    #[serde(skip)]
    pub named: Vec<(String, Steps)>,
}

/// Inputs `compare` cannot use (exit 2), each saying which file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{role} log {path}: {message}")]
    Read {
        role: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("{role} log {path}: metric `{metric}`{} is absent for rank {rank} ({seen}) — choose one with --metric / --rank", fallback_words(.fallbacks))]
    MetricAbsent {
        role: &'static str,
        path: PathBuf,
        metric: String,
        /// The default metric's fallbacks tried too.
        fallbacks: Vec<String>,
        rank: u32,
        seen: String,
    },
    #[error("the baseline's `{metric}` is 0 at all {steps} compared step(s) (baseline {baseline}, candidate {candidate}): relative errors are undefined and a value that never moves says nothing about the port — check that the run computes and logs its loss (a loss of 0 from the first step is not being logged), or compare a metric that changes with --metric")]
    AllZero {
        metric: String,
        steps: usize,
        baseline: PathBuf,
        candidate: PathBuf,
    },
    #[error("no common steps: the baseline has {baseline} and the candidate {candidate} values of `{metric}`, but no (epoch, iteration) in common (baseline starts at {baseline_first}, candidate at {candidate_first}) — use --align order to pair by position")]
    NoCommonSteps {
        metric: String,
        baseline: usize,
        candidate: usize,
        baseline_first: String,
        candidate_first: String,
    },
    #[error("report directory {path}: {message}")]
    Report { path: PathBuf, message: String },
}

fn fallback_words(fallbacks: &[String]) -> String {
    if fallbacks.is_empty() {
        String::new()
    } else {
        format!(" (nor its fallbacks `{}`)", fallbacks.join("`, `"))
    }
}

/// A baseline and a candidate value at the same step.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Pair {
    pub key: Key,
    pub baseline: f64,
    pub candidate: f64,
}

impl Pair {
    /// candidate − baseline.
    pub fn diff(&self) -> f64 {
        self.candidate - self.baseline
    }
    /// (candidate − baseline) / baseline, signed, as loss.py computes it.
    pub fn rel(&self) -> f64 {
        (self.candidate - self.baseline) / self.baseline
    }
}

/// A run of consecutive steps present in only one log.
#[derive(Debug, Clone, Serialize)]
pub struct KeyRange {
    pub first: Key,
    pub last: Key,
    pub count: usize,
}

impl fmt::Display for KeyRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.count == 1 {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{} .. {} ({} steps)", self.first, self.last, self.count)
        }
    }
}

/// An extreme value and the step where it occurs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Extreme {
    pub value: f64,
    pub at: Key,
    /// Position among the paired steps (0-based).
    pub index: usize,
}

/// The figures of a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    pub steps_compared: usize,
    /// mean((c-b)/b) — signed: opposite errors cancel.
    pub mean_rel_err_signed: f64,
    /// mean(|c-b|/|b|).
    pub mean_rel_err_abs: f64,
    /// mean(c-b) — signed.
    pub mean_diff_signed: f64,
    /// mean(|c-b|).
    pub mean_abs_err: f64,
    pub max_abs_err: Extreme,
    /// Largest |c-b|/|b|.
    pub max_rel_err: Extreme,
    /// Steps whose baseline value is 0 (left out of the relative figures).
    pub zero_baseline_steps: usize,
    /// Steps where either value is NaN or infinite (a diverged run): they poison the means,
    /// so any such step makes both rules fail.
    pub non_finite_steps: usize,
    /// Values of the metric in the baseline and in the candidate.
    pub baseline_steps: usize,
    pub candidate_steps: usize,
    /// steps_compared / the longer log's steps: how much of the longer run is compared.
    pub coverage: f64,
    /// The least coverage that passes (--min-coverage).
    pub min_coverage: f64,
    /// Steps averaged for the final value.
    pub tail: usize,
    pub final_baseline: f64,
    pub final_candidate: f64,
    /// (final_candidate − final_baseline) / |final_baseline|; NaN (null in JSON) when the
    /// baseline's final value is 0.
    pub final_rel_err: f64,
    /// final_candidate − final_baseline.
    pub final_abs_err: f64,
}

/// Last-value comparison of an eval metric present in both logs.
#[derive(Debug, Clone, Serialize)]
pub struct EvalFigure {
    pub metric: String,
    pub baseline: f64,
    pub candidate: f64,
    pub rel_err: f64,
}

/// Pass or fail, with the sentence that says why.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub rule: Rule,
    pub pass: bool,
    /// What the rule alone says, before the coverage check.
    pub rule_pass: bool,
    pub reason: String,
    pub warnings: Vec<String>,
}

/// What loss.py would conclude (modelzoo-loss rule only).
#[derive(Debug, Clone, Serialize)]
pub struct LossPyCheck {
    #[serde(flatten)]
    pub outcome: losspy::Outcome,
    /// loss.py would read exactly the values this comparison's rule used.
    pub same_values: bool,
    /// How loss.py's extraction or verdict differs, in words (also among the warnings).
    pub note: Option<String>,
}

/// Everything `compare` found.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub metric: String,
    pub rank: u32,
    pub align: Align,
    /// Whether a candidate covering part of the baseline is judged on its steps.
    pub allow_partial: bool,
    /// Baseline and candidate are the same file.
    pub same_file: bool,
    pub baseline: Series,
    pub candidate: Series,
    #[serde(skip)]
    pub pairs: Pairs,
    pub only_in_baseline: usize,
    pub only_in_candidate: usize,
    pub only_in_baseline_ranges: Vec<KeyRange>,
    pub only_in_candidate_ranges: Vec<KeyRange>,
    pub figures: Figures,
    pub eval: Vec<EvalFigure>,
    pub verdict: Verdict,
    /// loss.py's own reading of the logs (modelzoo-loss rule only).
    pub losspy: Option<LossPyCheck>,
    /// The candidate against run-to-run variation (only with a noise run).
    pub noise: Option<NoiseFloor>,
    /// What the two logs say about their runs, and where they differ.
    pub config: RunConfig,
    /// On a FAIL: what to run next to find out why (empty on a PASS).
    pub next_steps: Vec<String>,
}

/// The noise verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseVerdict {
    /// Candidate deviation ≤ factor × noise deviation.
    Within,
    /// Candidate deviation > factor × noise deviation.
    Exceeds,
    /// No variation could be measured (the noise run equals the baseline, or no usable step).
    Undefined,
}

impl NoiseVerdict {
    /// The verdict in words, as printed.
    pub fn words(&self) -> &'static str {
        match self {
            NoiseVerdict::Within => "within run-to-run variation",
            NoiseVerdict::Exceeds => "exceeds run-to-run variation",
            NoiseVerdict::Undefined => "run-to-run variation not measurable",
        }
    }
}

/// The candidate's deviation from the baseline against a second baseline run's (the noise
/// run's): is the port's difference larger than what another seed gives?
#[derive(Debug, Clone, Serialize)]
pub struct NoiseFloor {
    pub path: PathBuf,
    /// Values of the metric in the noise run.
    pub values: usize,
    /// Steps the deviations are measured on: paired in all three logs, baseline ≠ 0, all finite.
    pub steps: usize,
    /// Steps the baseline and candidate were compared on (for "covers N of M").
    pub steps_compared: usize,
    /// Noise deviation: mean(|n−b|/|b|) over `steps` — the run-to-run variation.
    pub noise_dev: f64,
    /// Candidate deviation: mean(|c−b|/|b|) over the same steps.
    pub candidate_dev: f64,
    /// candidate_dev / noise_dev; null when the noise deviation is 0.
    pub ratio: Option<f64>,
    pub factor: f64,
    /// Steps averaged for the final values below (the last `tail` of `steps`).
    pub tail: usize,
    /// |n̄−b̄|/|b̄| of the final values (informational: one sample of run-to-run variation).
    pub noise_final_dev: f64,
    /// |c̄−b̄|/|b̄| of the final values over the same steps.
    pub candidate_final_dev: f64,
    pub verdict: NoiseVerdict,
    /// The rule, in words.
    pub rule: String,
    /// Why the verdict is what it is, with the figures.
    pub reason: String,
    /// The noise run is the baseline file itself.
    pub same_file: bool,
    /// Whether this verdict decided pass/fail (`--noise-gate`).
    pub gate: bool,
}

/// Pair two series, compute the figures and apply the rule.
pub fn compare(
    baseline: Series,
    candidate: Series,
    options: &Options,
) -> Result<Comparison, CompareError> {
    compare_with_noise(baseline, candidate, None, options)
}

/// [`compare`], and with a noise run (read like the baseline) measure the noise floor.
pub fn compare_with_noise(
    mut baseline: Series,
    mut candidate: Series,
    noise: Option<Series>,
    options: &Options,
) -> Result<Comparison, CompareError> {
    let mut warnings = Vec::new();
    let same_file = same_file(&baseline.path, &candidate.path);
    if same_file {
        warnings.push(format!(
            "baseline and candidate are the same file ({}): this compares a log with itself",
            if baseline.path == candidate.path {
                baseline.path.display().to_string()
            } else {
                format!(
                    "{} and {}",
                    baseline.path.display(),
                    candidate.path.display()
                )
            }
        ));
    }
    if baseline.metric != candidate.metric {
        warnings.push(format!(
            "the baseline's loss is `{}` and the candidate's `{}` (the default metric's fallback): they are compared as the same loss",
            baseline.metric, candidate.metric
        ));
    }
    for (role, s) in [("baseline", &baseline), ("candidate", &candidate)] {
        if s.overlong_lines > 0 {
            warnings.push(format!(
                "{} line(s) of the {role} are longer than the {} MiB line limit (progress bars redrawn with `\\r`?): they were read from the text after their last `\\r`{}",
                s.overlong_lines,
                dllogger::DEFAULT_MAX_LINE >> 20,
                if s.overlong_unread > 0 {
                    format!(
                        "; {} of them were still too long and were not read",
                        s.overlong_unread
                    )
                } else {
                    String::new()
                }
            ));
        }
    }
    // loss.py pairs by position after cutting to the shorter series.
    let align = match options.rule {
        Rule::ModelzooLoss => {
            if options.align == Align::Key {
                warnings.push(
                    "the modelzoo-loss rule pairs steps by position, as loss.py does (--align key is not used)"
                        .to_string(),
                );
            }
            Align::Order
        }
        _ => options.align,
    };
    // A log numbered by (epoch, iteration) and one by step alone: pair by the step.
    let renumbered = (align == Align::Key)
        .then(|| match_numbering(&mut baseline.steps, &mut candidate.steps))
        .flatten();
    warnings.extend(renumbered.iter().map(|r| r.note.clone()));
    let (pairs, only_b, only_c) = match align {
        Align::Order => pair_by_order(&baseline.steps, &candidate.steps),
        Align::Key => pair_by_key(&baseline.steps, &candidate.steps),
    };
    if pairs.is_empty() {
        let first = |s: &Series| s.steps.min_key().map(|k| k.to_string()).unwrap_or_default();
        return Err(CompareError::NoCommonSteps {
            metric: baseline.metric.clone(),
            baseline: baseline.values,
            candidate: candidate.values,
            baseline_first: first(&baseline),
            candidate_first: first(&candidate),
        });
    }
    if pairs.baseline().iter().all(|&b| b == 0.0) {
        return Err(CompareError::AllZero {
            metric: baseline.metric.clone(),
            steps: pairs.len(),
            baseline: baseline.path.clone(),
            candidate: candidate.path.clone(),
        });
    }
    let coverage = Coverage {
        baseline_steps: baseline.values,
        candidate_steps: candidate.values,
        min_coverage: options.min_coverage,
    };
    let figures = figures(&pairs, coverage, options.tail.max(1));
    let eval: Vec<EvalFigure> = baseline
        .eval_last
        .iter()
        .filter_map(|(m, &b)| {
            candidate.eval_last.get(m).map(|&c| EvalFigure {
                metric: m.clone(),
                baseline: b,
                candidate: c,
                rel_err: (c - b) / b.abs(),
            })
        })
        .collect();

    if only_b.count > 0 || only_c.count > 0 {
        warnings.push(format!(
            "{} step(s) only in the baseline and {} only in the candidate were not compared (listed below)",
            only_b.count, only_c.count
        ));
    }
    if figures.zero_baseline_steps > 0 {
        warnings.push(format!(
            "{} step(s) have a baseline value of 0 and are left out of the relative figures",
            figures.zero_baseline_steps
        ));
    }
    if figures.non_finite_steps > 0 {
        let first = pairs
            .iter()
            .find(|p| !(p.baseline.is_finite() && p.candidate.is_finite()))
            .map(|p| p.key.to_string())
            .unwrap_or_default();
        warnings.push(format!(
            "{} step(s) hold NaN or infinite values (first at {first}): the run diverged or the log is damaged",
            figures.non_finite_steps
        ));
    }
    if !same_file
        && only_b.count == 0
        && only_c.count == 0
        && pairs
            .baseline()
            .iter()
            .zip(pairs.candidate())
            .all(|(b, c)| b.to_bits() == c.to_bits())
    {
        warnings.push(
            "every value is identical in the two logs: is the candidate a copy of the baseline?"
                .to_string(),
        );
    }
    let config = run_config(&baseline.facts, &candidate.facts);
    if !config.differences.is_empty() {
        warnings.push(format!(
            "the two runs' configurations differ ({}): they did not compute the same thing, so the figures measure more than the port",
            config
                .differences
                .iter()
                .map(|d| format!("{}: {} vs {}", d.fact, d.baseline, d.candidate))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let mut verdict = verdict(options.rule, &figures, warnings);
    gate_coverage(&mut verdict, &figures, options.allow_partial);
    // A NaN or inf at a step only one log has is not paired, yet that run diverged there.
    for (role, s) in [("baseline", &baseline), ("candidate", &candidate)] {
        let Some(i) = s.steps.values().iter().position(|v| !v.is_finite()) else {
            continue;
        };
        if verdict.pass && figures.non_finite_steps == 0 {
            verdict.pass = false;
            verdict.reason = format!(
                "the {role} holds a NaN or infinite value ({} at {}) at a step the other log lacks: that run diverged{}",
                s.steps.values()[i],
                s.steps.key(i),
                if options.rule == Rule::ModelzooLoss {
                    " (the ModelZoo's loss.py cannot read nan or inf and would not see it)"
                } else {
                    ""
                }
            );
        }
    }
    // Detection: the evaluation's mAP, higher is better, by its own rule.
    detection::judge(&baseline.eval_last, &candidate.eval_last, &mut verdict);
    let losspy = match (&baseline.losspy, &candidate.losspy, options.rule) {
        (Some(b), Some(c), Rule::ModelzooLoss) => {
            let check = losspy_check(&baseline, &candidate, b, c, &verdict, options);
            if let Some(note) = &check.note {
                verdict.warnings.push(note.clone());
            }
            Some(check)
        }
        _ => None,
    };
    // Release the raw series before the noise run is paired: the pairs hold what is needed.
    baseline.steps.clear();
    candidate.steps.clear();
    let noise = match noise {
        Some(mut n) => {
            renumber_like_baseline(&mut n.steps, renumbered.as_ref());
            let floor = noise_floor(&baseline.path, n, &pairs, align, options)?;
            verdict.warnings.extend(floor.1);
            let floor = floor.0;
            if options.noise_gate && floor.verdict != NoiseVerdict::Within && verdict.pass {
                verdict.pass = false;
                verdict.reason = format!(
                    "--noise-gate: the noise verdict is \"{}\" (the rule alone passes: {})",
                    floor.verdict.words(),
                    verdict.reason
                );
            }
            Some(floor)
        }
        None => None,
    };
    let next_steps = if verdict.pass {
        Vec::new()
    } else {
        next_steps(
            &baseline,
            &candidate,
            &verdict,
            &config,
            noise.as_ref(),
            options,
        )
    };
    Ok(Comparison {
        metric: baseline.metric.clone(),
        rank: options.rank,
        align,
        allow_partial: options.allow_partial,
        same_file,
        baseline,
        candidate,
        only_in_baseline: only_b.count,
        only_in_candidate: only_c.count,
        only_in_baseline_ranges: only_b.ranges,
        only_in_candidate_ranges: only_c.ranges,
        pairs,
        figures,
        eval,
        verdict,
        losspy,
        noise,
        config,
        next_steps,
    })
}

#[cfg(test)]
mod tests;
