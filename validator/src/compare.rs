//! `modelzoo compare`: does the candidate (SDAA) run match the baseline (CUDA) run?
//!
//! Both logs are streamed through `dllogger`'s reader (any format it knows); only the selected
//! metric's values for the selected rank are kept (a 32-byte point each), plus the last value
//! of every `val.*` metric. Steps are paired by (epoch, iteration) — the n-th occurrence of a
//! key in one log with the n-th in the other — or by position (`Align::Order`); steps present
//! in only one log are counted and listed as ranges.
//!
//! A comparison cannot pass a broken run: a candidate that covers fewer of the baseline's
//! steps fails unless partial runs are allowed ([`Options::allow_partial`]); a zero final value
//! is judged by an absolute rule ([`ZERO_FINAL_ABS_TOL`]) rather than a NaN relative error;
//! comparing a file with itself is flagged; and under `modelzoo-loss` the output says when
//! loss.py's own extraction would read the logs differently ([`crate::losspy`]).
//!
//! Given a second baseline run (another seed, [`Options::noise`]), the comparison also says
//! whether the candidate deviates from the baseline more than that run does: the noise floor
//! ([`NoiseFloor`]), reported beside the rule's verdict and gating it only under
//! [`Options::noise_gate`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::losspy;

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

/// What to compare and how.
#[derive(Debug, Clone)]
pub struct Options {
    pub metric: String,
    pub rank: u32,
    pub align: Align,
    /// The final value is the mean of the last `tail` paired steps.
    pub tail: usize,
    pub rule: Rule,
    /// Judge a candidate that covers only part of the baseline's steps (a run stopped early)
    /// on the steps it has. Off by default: such a candidate fails.
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
            metric: "train.loss".into(),
            rank: 0,
            align: Align::Key,
            tail: 10,
            rule: Rule::Rel1 { threshold: 0.01 },
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
    #[serde(skip)]
    pub points: Vec<Point>,
    /// Values of the selected metric for the selected rank.
    pub values: usize,
    /// Last value of each `val.*` metric for the selected rank.
    pub eval_last: BTreeMap<String, f64>,
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
    #[error("{role} log {path}: metric `{metric}` is absent for rank {rank} ({seen}) — choose one with --metric / --rank")]
    MetricAbsent {
        role: &'static str,
        path: PathBuf,
        metric: String,
        rank: u32,
        seen: String,
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

/// Stream one log and keep the selected metric's series. `role` names it in errors.
pub fn read_series(
    path: &Path,
    role: &'static str,
    metric: &str,
    rank: u32,
) -> Result<Series, CompareError> {
    let mut reader = dllogger::open(path).map_err(|e| CompareError::Read {
        role,
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut points = Vec::new();
    let mut eval_last: BTreeMap<String, f64> = BTreeMap::new();
    let mut metrics_seen: Vec<String> = Vec::new();
    let mut ranks_seen: Vec<u32> = Vec::new();
    loop {
        let record = match reader.try_next() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                return Err(CompareError::Read {
                    role,
                    path: path.to_path_buf(),
                    message: e.to_string(),
                })
            }
        };
        if !ranks_seen.contains(&record.rank) {
            ranks_seen.push(record.rank);
        }
        if record.rank != rank {
            continue;
        }
        for (name, value) in &record.metrics {
            if name == metric {
                points.push(Point {
                    key: Key::new(record.epoch, record.iteration, record.val_iteration),
                    value: *value,
                });
            }
            if name.starts_with("val.") {
                match eval_last.get_mut(name.as_str()) {
                    Some(v) => *v = *value,
                    None => {
                        eval_last.insert(name.clone(), *value);
                    }
                }
            }
            if metrics_seen.len() < 64 && !metrics_seen.iter().any(|m| m == name) {
                metrics_seen.push(name.clone());
            }
        }
    }
    let stats = reader.stats();
    ranks_seen.sort_unstable();
    metrics_seen.sort();
    let series = Series {
        path: path.to_path_buf(),
        values: points.len(),
        points,
        eval_last,
        metrics_seen,
        ranks_seen,
        lines: stats.lines,
        records: stats.records,
        malformed: stats.malformed,
        bytes: stats.bytes,
        overlong_lines: stats.overlong,
        overlong_unread: stats.overlong_unread,
        losspy: None,
    };
    if series.points.is_empty() {
        let seen = if series.records == 0 && series.overlong_unread > 0 {
            format!(
                "no metric records in {} lines: {} of them are longer than the {} MiB line limit, even their text after the last `\\r`, and were not read",
                series.lines,
                series.overlong_unread,
                dllogger::DEFAULT_MAX_LINE >> 20
            )
        } else if series.records == 0 {
            format!(
                "no metric records in {} lines — is this a training log?",
                series.lines
            )
        } else {
            format!(
                "ranks in the log: {:?}; metrics for rank {rank}: {}",
                series.ranks_seen,
                if series.metrics_seen.is_empty() {
                    "none".to_string()
                } else {
                    series.metrics_seen.join(", ")
                }
            )
        };
        return Err(CompareError::MetricAbsent {
            role,
            path: path.to_path_buf(),
            metric: metric.to_string(),
            rank,
            seen,
        });
    }
    Ok(series)
}

/// Read both logs in parallel (one thread each) and compare them. Under the modelzoo-loss
/// rule each log is also read the way loss.py reads it (another thread each).
pub fn compare_files(
    baseline: &Path,
    candidate: &Path,
    options: &Options,
) -> Result<Comparison, CompareError> {
    let with_losspy = options.rule == Rule::ModelzooLoss;
    let read = |path: &Path, role: &'static str| -> Result<Series, CompareError> {
        let (series, extraction) = std::thread::scope(|s| {
            let e = with_losspy.then(|| s.spawn(|| losspy::extract(path)));
            let series = read_series(path, role, &options.metric, options.rank);
            let e = e.map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("the reading thread panicked")))
            });
            (series, e)
        });
        let mut series = series?;
        series.losspy = extraction.transpose().map_err(|e| CompareError::Read {
            role,
            path: path.to_path_buf(),
            message: format!("reading it as loss.py does: {e}"),
        })?;
        Ok(series)
    };
    let (b, c, n) = std::thread::scope(|s| {
        let b = s.spawn(|| read(baseline, "baseline"));
        let n = options.noise.as_deref().map(|path| {
            (
                path,
                s.spawn(move || read_series(path, "noise", &options.metric, options.rank)),
            )
        });
        let c = read(candidate, "candidate");
        let panicked = |role: &'static str, path: &Path| CompareError::Read {
            role,
            path: path.to_path_buf(),
            message: "the reading thread panicked".into(),
        };
        let b = b
            .join()
            .unwrap_or_else(|_| Err(panicked("baseline", baseline)));
        let n = n.map(|(path, h)| h.join().unwrap_or_else(|_| Err(panicked("noise", path))));
        (b, c, n)
    });
    compare_with_noise(b?, c?, n.transpose()?, options)
}

/// Whether two paths name the same file (the same device and inode: hard links, symlinks and
/// `a/../b` spellings included).
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
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
    /// Values of the metric in the baseline: the steps a complete candidate covers.
    pub baseline_steps: usize,
    /// steps_compared / baseline_steps: how much of the baseline run the candidate covers.
    pub coverage: f64,
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
    pub pairs: Vec<Pair>,
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
    let (pairs, only_b, only_c) = match align {
        Align::Order => pair_by_order(&baseline.points, &candidate.points),
        Align::Key => pair_by_key(&mut baseline.points, &mut candidate.points),
    };
    if pairs.is_empty() {
        let first = |s: &Series| {
            s.points
                .iter()
                .map(|p| p.key)
                .min()
                .map(|k| k.to_string())
                .unwrap_or_default()
        };
        return Err(CompareError::NoCommonSteps {
            metric: options.metric.clone(),
            baseline: baseline.values,
            candidate: candidate.values,
            baseline_first: first(&baseline),
            candidate_first: first(&candidate),
        });
    }
    let figures = figures(&pairs, baseline.values, options.tail.max(1));
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

    if !only_b.is_empty() || !only_c.is_empty() {
        warnings.push(format!(
            "{} step(s) only in the baseline and {} only in the candidate were not compared (listed below)",
            only_b.len(),
            only_c.len()
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
        && only_b.is_empty()
        && only_c.is_empty()
        && pairs
            .iter()
            .all(|p| p.baseline.to_bits() == p.candidate.to_bits())
    {
        warnings.push(
            "every value is identical in the two logs: is the candidate a copy of the baseline?"
                .to_string(),
        );
    }
    let mut verdict = verdict(options.rule, &figures, warnings);
    gate_coverage(&mut verdict, &figures, options.allow_partial);
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
    let noise = match noise {
        Some(n) => {
            let floor = noise_floor(&mut baseline, n, &pairs, align, options)?;
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
    // Release the raw series: the pairs hold what the report needs.
    baseline.points = Vec::new();
    candidate.points = Vec::new();
    Ok(Comparison {
        metric: options.metric.clone(),
        rank: options.rank,
        align,
        allow_partial: options.allow_partial,
        same_file,
        baseline,
        candidate,
        only_in_baseline: only_b.len(),
        only_in_candidate: only_c.len(),
        only_in_baseline_ranges: ranges(&only_b),
        only_in_candidate_ranges: ranges(&only_c),
        pairs,
        figures,
        eval,
        verdict,
        losspy,
        noise,
    })
}

/// Measure the noise floor: pair the noise run with the baseline as the candidate was
/// (`align`), keep the steps paired in all three logs where the baseline is non-zero and every
/// value finite, and compare the candidate's mean |relative deviation| with the noise run's.
/// Returns the floor and the warnings it raises.
fn noise_floor(
    baseline: &mut Series,
    mut noise: Series,
    pairs: &[Pair],
    align: Align,
    options: &Options,
) -> Result<(NoiseFloor, Vec<String>), CompareError> {
    let mut warnings = Vec::new();
    let same = same_file(&baseline.path, &noise.path);
    if same {
        warnings.push(format!(
            "baseline and noise run are the same file ({}): the noise floor is zero — give a baseline run with another seed",
            noise.path.display()
        ));
    }
    // Steps of the noise run paired with the baseline, joined with the candidate's pairs.
    // Both pairings keep the baseline's order (key order, or position), so a merge works.
    let (noise_pairs, _, _) = match align {
        Align::Order => pair_by_order(&baseline.points, &noise.points),
        Align::Key => pair_by_key(&mut baseline.points, &mut noise.points),
    };
    let mut triples: Vec<(f64, f64, f64)> = Vec::new(); // (b, c, n)
    let (mut i, mut j) = (0, 0);
    while i < pairs.len() && j < noise_pairs.len() {
        let ord = match align {
            Align::Order => std::cmp::Ordering::Equal,
            Align::Key => pairs[i].key.cmp(&noise_pairs[j].key),
        };
        match ord {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                triples.push((
                    pairs[i].baseline,
                    pairs[i].candidate,
                    noise_pairs[j].candidate,
                ));
                i += 1;
                j += 1;
            }
        }
    }
    if triples.is_empty() {
        return Err(CompareError::Read {
            role: "noise",
            path: noise.path.clone(),
            message: format!(
                "none of its {} values of `{}` is at a step the baseline and candidate were compared on — it must be a run of the baseline's configuration (another seed); try --align order to pair by position",
                noise.values, options.metric
            ),
        });
    }
    let paired = triples.len();
    triples.retain(|&(b, c, n)| b != 0.0 && b.is_finite() && c.is_finite() && n.is_finite());
    let steps = triples.len();
    if paired < pairs.len() {
        warnings.push(format!(
            "the noise run covers {paired} of the {} compared steps: the noise floor is measured on those",
            pairs.len()
        ));
    }
    if steps < paired {
        warnings.push(format!(
            "{} of the {paired} steps shared with the noise run have a baseline of 0 or a NaN/infinite value and are left out of the noise floor",
            paired - steps
        ));
    }
    let mean = |xs: &mut dyn Iterator<Item = f64>, n: usize| xs.sum::<f64>() / n as f64;
    let (noise_dev, candidate_dev) = if steps == 0 {
        (f64::NAN, f64::NAN)
    } else {
        (
            mean(
                &mut triples.iter().map(|&(b, _, n)| ((n - b) / b).abs()),
                steps,
            ),
            mean(
                &mut triples.iter().map(|&(b, c, _)| ((c - b) / b).abs()),
                steps,
            ),
        )
    };
    let tail = options.tail.max(1).min(steps);
    let last = &triples[steps - tail..];
    let (fb, fc, fnz) = if tail == 0 {
        (f64::NAN, f64::NAN, f64::NAN)
    } else {
        (
            mean(&mut last.iter().map(|t| t.0), tail),
            mean(&mut last.iter().map(|t| t.1), tail),
            mean(&mut last.iter().map(|t| t.2), tail),
        )
    };
    let factor = options.noise_factor;
    let rule = format!(
        "within run-to-run variation when the candidate's mean |relative deviation| from the baseline, mean(|c−b|/|b|), is at most {factor} × the noise run's, mean(|n−b|/|b|), over the steps all three logs share"
    );
    let ratio = (noise_dev > 0.0).then(|| candidate_dev / noise_dev);
    let (verdict, reason) = match ratio {
        None if steps == 0 => (
            NoiseVerdict::Undefined,
            format!("none of the {paired} steps shared with the noise run is usable (baseline 0 or NaN/infinite values): no noise floor"),
        ),
        None => (
            NoiseVerdict::Undefined,
            format!(
                "the noise run equals the baseline at all {steps} shared steps: the noise floor is zero, so comparing against it is meaningless — give a baseline run with another seed (candidate deviation {})",
                pct(candidate_dev)
            ),
        ),
        Some(r) => {
            // A ratio that is the factor in decimal passes despite binary rounding.
            let within = r <= factor * (1.0 + 1e-9);
            (
                if within {
                    NoiseVerdict::Within
                } else {
                    NoiseVerdict::Exceeds
                },
                format!(
                    "candidate deviation {} / noise deviation {} = {r:.3} {} {factor} over {steps} step(s)",
                    pct(candidate_dev),
                    pct(noise_dev),
                    if within { "≤" } else { ">" }
                ),
            )
        }
    };
    noise.points = Vec::new();
    Ok((
        NoiseFloor {
            path: noise.path,
            values: noise.values,
            steps,
            steps_compared: pairs.len(),
            noise_dev,
            candidate_dev,
            ratio,
            factor,
            tail,
            noise_final_dev: ((fnz - fb) / fb).abs(),
            candidate_final_dev: ((fc - fb) / fb).abs(),
            verdict,
            rule,
            reason,
            same_file: same,
            gate: options.noise_gate,
        },
        warnings,
    ))
}

/// A candidate that covers fewer steps than the baseline has stopped early (or logs less
/// often): it fails unless partial runs are allowed, and then it is warned about.
fn gate_coverage(v: &mut Verdict, f: &Figures, allow_partial: bool) {
    if f.steps_compared >= f.baseline_steps {
        return;
    }
    let covered = format!(
        "the candidate covers {} of the baseline's {} steps ({})",
        f.steps_compared,
        f.baseline_steps,
        coverage_pct(f.coverage)
    );
    if allow_partial {
        v.warnings.push(format!(
            "{covered}; --allow-partial: the verdict judges those steps only"
        ));
    } else {
        v.reason = format!(
            "{covered}: a run that stopped early does not pass — complete it, or give --allow-partial to judge the steps it has (the rule on those steps: {}: {})",
            if v.pass { "PASS" } else { "FAIL" },
            v.reason
        );
        v.pass = false;
    }
}

/// A coverage fraction in percent, rounded down so that anything short of all steps never
/// reads 100%.
pub fn coverage_pct(x: f64) -> String {
    format!("{:.2}%", (x * 10_000.0).floor() / 100.0)
}

/// Compare loss.py's reading of the logs with what this comparison's rule used, and say how
/// they differ.
fn losspy_check(
    baseline: &Series,
    candidate: &Series,
    b: &losspy::Extraction,
    c: &losspy::Extraction,
    verdict: &Verdict,
    options: &Options,
) -> LossPyCheck {
    let outcome = losspy::outcome(b, c);
    let same_bits = |x: f64, y: f64| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
    let mut parts: Vec<String> = Vec::new();
    let unread: Vec<&str> = [("baseline", b), ("candidate", c)]
        .iter()
        .filter(|(_, e)| e.pattern == losspy::Pattern::None)
        .map(|(role, _)| *role)
        .collect();
    if !unread.is_empty() {
        parts.push(format!(
            "loss.py's regex reads 0 values of the {} (neither `{}` nor its fallback `{}` matches anywhere in {})",
            unread.join(" and 0 of the "),
            losspy::PRIMARY,
            losspy::FALLBACK,
            if unread.len() == 1 { "it" } else { "them" }
        ));
    }
    let mut same_values = unread.is_empty();
    for (role, series, e) in [("baseline", baseline, b), ("candidate", candidate, c)] {
        let ours: Vec<f64> = series.points.iter().map(|p| p.value).collect();
        let non_finite = ours.iter().filter(|v| !v.is_finite()).count();
        if e.pattern == losspy::Pattern::None {
            // Said above.
        } else if e.len() != ours.len() {
            same_values = false;
            let mut why = Vec::new();
            if e.pattern == losspy::Pattern::Fallback {
                why.push(format!("from its fallback `{}`", losspy::FALLBACK));
            }
            if non_finite > 0 {
                why.push(format!(
                    "its pattern cannot read nan or inf: this comparison has {non_finite} such value(s)"
                ));
            }
            parts.push(format!(
                "loss.py's regex reads {} values of the {role} where this comparison reads {}{}",
                e.len(),
                ours.len(),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", why.join("; "))
                }
            ));
        } else if let Some(i) = (0..ours.len()).find(|&i| !same_bits(ours[i], e.values[i])) {
            same_values = false;
            let read = match &e.first_unparsable {
                Some(u) if u.index == i => format!("captures `{}`", u.text),
                _ => format!("reads {}", e.values[i]),
            };
            parts.push(format!(
                "loss.py's regex {read} as the {role}'s value {} ({}) where this comparison reads {}",
                i + 1,
                series.points[i].key,
                ours[i]
            ));
        }
    }
    let rule_alone = |pass: bool| if pass { "passes" } else { "fails" };
    match (&outcome.unconverted, outcome.pass) {
        (Some((role, u)), _) if u.too_long => parts.push(format!(
            "loss.py's capture {} of the {role} is over {} characters long: its verdict is not reproduced",
            u.index + 1,
            losspy::MAX_CAPTURE
        )),
        (Some((role, u)), _) => parts.push(format!(
            "loss.py itself would stop with a ValueError: float() rejects `{}`, the {role}'s value {} as its regex reads it",
            u.text,
            u.index + 1
        )),
        (None, _) if outcome.steps == 0 => {
            parts.push("loss.py itself would fail (the mean of no values is NaN)".into())
        }
        (None, Some(pass)) if pass != verdict.pass || !parts.is_empty() => parts.push(format!(
            "loss.py would compare {} steps and {}: mean((c-b)/b) = {:.6e}, mean(c-b) = {:.6e}{}",
            outcome.steps,
            if pass { "pass" } else { "fail" },
            outcome.mean_rel,
            outcome.mean_diff,
            if pass != verdict.pass {
                format!(
                    " — this comparison {}, and its verdict stands",
                    rule_alone(verdict.pass)
                )
            } else {
                String::new()
            }
        )),
        _ => {}
    }
    if !parts.is_empty() && (options.metric != "train.loss" || options.rank != 0) {
        parts.insert(
            0,
            format!(
                "loss.py reads rank 0's train.loss, whatever --metric ({}) and --rank ({}) say",
                options.metric, options.rank
            ),
        );
    }
    let note = (!parts.is_empty()).then(|| parts.join("; "));
    LossPyCheck {
        outcome,
        same_values,
        note,
    }
}

/// Position pairing: the first min(n, m) values of each.
/// Steps of one log left unpaired: (position in that log's series, key).
type Unpaired = Vec<(usize, Key)>;

fn pair_by_order(b: &[Point], c: &[Point]) -> (Vec<Pair>, Unpaired, Unpaired) {
    let n = b.len().min(c.len());
    let pairs = b[..n]
        .iter()
        .zip(&c[..n])
        .map(|(b, c)| Pair {
            key: b.key,
            baseline: b.value,
            candidate: c.value,
        })
        .collect();
    let only_b = (n..b.len()).map(|i| (i, b[i].key)).collect();
    let only_c = (n..c.len()).map(|j| (j, c[j].key)).collect();
    (pairs, only_b, only_c)
}

/// Key pairing: number repeated keys by occurrence (in log order), sort, merge-join.
fn pair_by_key(b: &mut [Point], c: &mut [Point]) -> (Vec<Pair>, Unpaired, Unpaired) {
    number_occurrences(b);
    number_occurrences(c);
    let mut pairs = Vec::with_capacity(b.len().min(c.len()));
    let (mut only_b, mut only_c) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < b.len() && j < c.len() {
        match b[i].key.cmp(&c[j].key) {
            std::cmp::Ordering::Less => {
                only_b.push((i, b[i].key));
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                only_c.push((j, c[j].key));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                pairs.push(Pair {
                    key: b[i].key,
                    baseline: b[i].value,
                    candidate: c[j].value,
                });
                i += 1;
                j += 1;
            }
        }
    }
    only_b.extend((i..b.len()).map(|i| (i, b[i].key)));
    only_c.extend((j..c.len()).map(|j| (j, c[j].key)));
    (pairs, only_b, only_c)
}

/// Give the n-th repeat of a key (in log order) occurrence n, then sort by key. A stable sort
/// keeps repeats in log order, so occurrence numbers follow from adjacent equal triples.
fn number_occurrences(points: &mut [Point]) {
    points.sort_by_key(|p| p.key.parts);
    for i in 1..points.len() {
        if points[i].key.parts == points[i - 1].key.parts {
            points[i].key.occurrence = points[i - 1].key.occurrence.saturating_add(1);
        }
    }
}

/// Compress unpaired steps into runs: steps next to each other in their log's series with no
/// paired step between them form one range (across epoch boundaries too).
fn ranges(unpaired: &[(usize, Key)]) -> Vec<KeyRange> {
    let mut out: Vec<KeyRange> = Vec::new();
    let mut prev = None;
    for &(pos, k) in unpaired {
        match out.last_mut() {
            Some(last) if prev == Some(pos.wrapping_sub(1)) => {
                last.last = k;
                last.count += 1;
            }
            _ => out.push(KeyRange {
                first: k,
                last: k,
                count: 1,
            }),
        }
        prev = Some(pos);
    }
    out
}

/// The figures over the paired steps (`baseline_steps`: values in the baseline); sums are
/// sequential, as Python's `sum` does.
pub fn figures(pairs: &[Pair], baseline_steps: usize, tail: usize) -> Figures {
    let n = pairs.len();
    let (mut sum_rel, mut sum_abs_rel, mut sum_diff, mut sum_abs) = (0.0, 0.0, 0.0, 0.0);
    let mut rel_n = 0usize;
    let mut max_abs = Extreme {
        value: f64::NEG_INFINITY,
        at: pairs[0].key,
        index: 0,
    };
    let mut max_rel = max_abs;
    for (i, p) in pairs.iter().enumerate() {
        let d = p.diff();
        sum_diff += d;
        sum_abs += d.abs();
        if d.abs() > max_abs.value {
            max_abs = Extreme {
                value: d.abs(),
                at: p.key,
                index: i,
            };
        }
        if p.baseline != 0.0 {
            let r = p.rel();
            sum_rel += r;
            sum_abs_rel += r.abs();
            rel_n += 1;
            if r.abs() > max_rel.value {
                max_rel = Extreme {
                    value: r.abs(),
                    at: p.key,
                    index: i,
                };
            }
        }
    }
    if rel_n == 0 {
        max_rel.value = f64::NAN;
    }
    let tail = tail.min(n);
    let last = &pairs[n - tail..];
    let final_baseline = last.iter().map(|p| p.baseline).sum::<f64>() / tail as f64;
    let final_candidate = last.iter().map(|p| p.candidate).sum::<f64>() / tail as f64;
    Figures {
        steps_compared: n,
        mean_rel_err_signed: sum_rel / rel_n as f64,
        mean_rel_err_abs: sum_abs_rel / rel_n as f64,
        mean_diff_signed: sum_diff / n as f64,
        mean_abs_err: sum_abs / n as f64,
        max_abs_err: max_abs,
        max_rel_err: max_rel,
        zero_baseline_steps: n - rel_n,
        non_finite_steps: pairs
            .iter()
            .filter(|p| !(p.baseline.is_finite() && p.candidate.is_finite()))
            .count(),
        baseline_steps,
        coverage: if baseline_steps == 0 {
            1.0
        } else {
            (n as f64 / baseline_steps as f64).min(1.0)
        },
        tail,
        final_baseline,
        final_candidate,
        final_rel_err: (final_candidate - final_baseline) / final_baseline.abs(),
        final_abs_err: final_candidate - final_baseline,
    }
}

/// Apply a rule to the figures.
pub fn verdict(rule: Rule, f: &Figures, mut warnings: Vec<String>) -> Verdict {
    let (pass, reason) = match rule {
        _ if f.non_finite_steps > 0 => (
            false,
            format!(
                "{} paired step(s) hold NaN or infinite values; the figures are not meaningful",
                f.non_finite_steps
            ),
        ),
        Rule::Rel1 { .. } if f.final_baseline == 0.0 => {
            let d = f.final_abs_err.abs();
            let pass = d <= ZERO_FINAL_ABS_TOL;
            (
                pass,
                format!(
                    "the baseline's final value is 0, so its relative error is undefined; absolute rule: |candidate final − baseline final| = {d:e} {} {ZERO_FINAL_ABS_TOL:e} (final value = mean of the last {} step(s): baseline {}, candidate {})",
                    if pass { "≤" } else { ">" },
                    f.tail,
                    f.final_baseline,
                    f.final_candidate
                ),
            )
        }
        Rule::Rel1 { threshold } => {
            let e = f.final_rel_err.abs();
            // An error that is the threshold in decimal (76 vs 75.24 at 1%) passes despite
            // binary rounding: allow one part in 1e9 of the threshold.
            let pass = e <= threshold * (1.0 + 1e-9);
            (
                pass,
                format!(
                    "|relative error of the final value| = {} {} {} (final value = mean of the last {} step(s): baseline {}, candidate {})",
                    pct(e),
                    if pass { "≤" } else { ">" },
                    pct(threshold),
                    f.tail,
                    f.final_baseline,
                    f.final_candidate
                ),
            )
        }
        Rule::ModelzooLoss => {
            let by_rel = f.mean_rel_err_signed <= MODELZOO_LOSS_MEAN_REL;
            let by_diff = f.mean_diff_signed <= MODELZOO_LOSS_MEAN_DIFF;
            warnings.push(
                "modelzoo-loss uses signed means: errors of opposite sign cancel, so a large error can pass; see mean |relative error| and the max figures"
                    .to_string(),
            );
            (
                by_rel || by_diff,
                format!(
                    "mean((c-b)/b) = {:.6e} {} {MODELZOO_LOSS_MEAN_REL}, mean(c-b) = {:.6e} {} {MODELZOO_LOSS_MEAN_DIFF} (passes when either holds; {} steps paired by position)",
                    f.mean_rel_err_signed,
                    if by_rel { "≤" } else { ">" },
                    f.mean_diff_signed,
                    if by_diff { "≤" } else { ">" },
                    f.steps_compared
                ),
            )
        }
    };
    Verdict {
        rule,
        pass,
        rule_pass: pass,
        reason,
        warnings,
    }
}

/// A fraction as a percentage with enough digits to see small errors.
pub fn pct(x: f64) -> String {
    format!("{:.4}%", x * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(keys: &[(u64, u64)], start: f64) -> Vec<Point> {
        keys.iter()
            .enumerate()
            .map(|(i, &(e, it))| Point {
                key: Key::new(Some(e), Some(it), None),
                value: start + i as f64,
            })
            .collect()
    }

    #[test]
    fn key_pairing_lists_steps_in_one_log_only() {
        let mut b = pts(&[(0, 0), (0, 1), (0, 2), (0, 3)], 1.0);
        let mut c = pts(&[(0, 2), (0, 3), (0, 4), (0, 5), (1, 0)], 10.0);
        let (pairs, ob, oc) = pair_by_key(&mut b, &mut c);
        assert_eq!(pairs.len(), 2);
        assert_eq!(pairs[0].baseline, 3.0);
        assert_eq!(pairs[0].candidate, 10.0);
        assert_eq!(ob.len(), 2);
        assert_eq!(oc.len(), 3);
        let r = ranges(&oc);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(
            r[0].to_string(),
            "epoch 0 iteration 4 .. epoch 1 iteration 0 (3 steps)"
        );
        let r = ranges(&ob);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(
            r[0].to_string(),
            "epoch 0 iteration 0 .. epoch 0 iteration 1 (2 steps)"
        );
    }

    #[test]
    fn repeated_keys_pair_by_occurrence() {
        // Unnumbered values (plain `loss x` lines) pair in log order.
        let mk = |vals: &[f64]| -> Vec<Point> {
            vals.iter()
                .map(|&v| Point {
                    key: Key::new(None, None, None),
                    value: v,
                })
                .collect()
        };
        let (mut b, mut c) = (mk(&[3.0, 2.0, 1.0]), mk(&[3.5, 2.5]));
        let (pairs, ob, oc) = pair_by_key(&mut b, &mut c);
        assert_eq!(
            pairs
                .iter()
                .map(|p| (p.baseline, p.candidate))
                .collect::<Vec<_>>(),
            vec![(3.0, 3.5), (2.0, 2.5)]
        );
        assert_eq!((ob.len(), oc.len()), (1, 0));
    }

    #[test]
    fn figures_and_rules_on_known_errors() {
        let pairs: Vec<Pair> = (0..20)
            .map(|i| Pair {
                key: Key::new(Some(0), Some(i), None),
                baseline: 2.0,
                candidate: if i % 2 == 0 { 2.2 } else { 1.8 },
            })
            .collect();
        let f = figures(&pairs, 20, 10);
        assert!(f.mean_rel_err_signed.abs() < 1e-15);
        assert!((f.mean_rel_err_abs - 0.1).abs() < 1e-12);
        assert!((f.max_abs_err.value - 0.2).abs() < 1e-12);
        assert_eq!(f.max_abs_err.index, 0);
        // Signed means cancel: loss.py's rule passes a ±10% error, rel1 judges the tail mean.
        assert!(verdict(Rule::ModelzooLoss, &f, vec![]).pass);
        assert!(verdict(Rule::Rel1 { threshold: 0.01 }, &f, vec![]).pass);
        let f1 = figures(&pairs[..19], 19, 1);
        assert!(!verdict(Rule::Rel1 { threshold: 0.01 }, &f1, vec![]).pass);
        // A NaN early on (outside the tail) still fails both rules.
        let mut diverged = pairs.clone();
        diverged[3].candidate = f64::NAN;
        let f2 = figures(&diverged, 20, 10);
        assert_eq!(f2.non_finite_steps, 1);
        assert!(!verdict(Rule::Rel1 { threshold: 0.01 }, &f2, vec![]).pass);
        assert!(!verdict(Rule::ModelzooLoss, &f2, vec![]).pass);
    }
}
