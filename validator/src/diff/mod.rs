//! `modelzoo diff`: which op drifted. Two dumps of the same training step (baseline = CUDA,
//! candidate = SDAA), optionally a third in fp64 as the arbiter, compared tensor by tensor,
//! and the first record that fails named (docs/diff.md).
//!
//! [`dump`] reads the modelzoo dump format and [`msprobe`] Ascend msprobe's statistics dumps;
//! [`pairing`] matches records; [`metrics`] measures and judges; [`report`] writes the
//! report.

pub mod dump;
pub mod metrics;
pub mod msprobe;
pub mod npy;
pub mod pairing;
pub mod report;

use std::path::PathBuf;

use rayon::prelude::*;
use serde::Serialize;

use dump::{Dump, Record};
use metrics::{Arbitration, Metrics, Status};
use npy::Npy;
use pairing::MatchedBy;

/// Why a diff could not be made: all of these are unusable input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("{path}: not a dump: {why}")]
    NotADump { path: PathBuf, why: String },
    #[error("{path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Tensor { path: PathBuf, message: String },
    #[error("the {} is not a dump of the same run as the baseline: {} is `{}` in the baseline ({}) and `{}` in the {} ({})", .0.other, .0.field, .0.baseline, .0.baseline_path.display(), .0.value, .0.other, .0.other_path.display())]
    Mismatch(Box<Mismatch>),
    #[error("no record of the baseline ({baseline}, {nb} records) matches one of the candidate ({candidate}, {nc} records), by key or by order, op and shape")]
    NothingPaired {
        baseline: PathBuf,
        candidate: PathBuf,
        nb: usize,
        nc: usize,
    },
    #[error("cannot write the report in {path}: {message}")]
    Report { path: PathBuf, message: String },
}

/// Two dumps that are not of the same run: the first field that differs.
#[derive(Debug)]
pub struct Mismatch {
    /// `candidate` or `reference`.
    pub other: &'static str,
    pub field: &'static str,
    pub baseline: String,
    pub value: String,
    pub baseline_path: PathBuf,
    pub other_path: PathBuf,
}

/// What to diff.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub baseline: PathBuf,
    pub candidate: PathBuf,
    /// An fp64 dump of the same model and step: the arbiter.
    pub reference: Option<PathBuf>,
    /// Which rank / step to take where a dump root holds several.
    pub rank: Option<u32>,
    pub step: Option<u64>,
}

/// One dump as the report names it.
#[derive(Debug, Clone, Serialize)]
pub struct DumpInfo {
    pub path: PathBuf,
    pub framework: String,
    pub model: Option<String>,
    pub step: Option<u64>,
    pub rank: Option<u32>,
    pub level: String,
    pub tensors: String,
    pub dtype: Option<String>,
    pub device: Option<String>,
    pub records: usize,
}

impl DumpInfo {
    fn of(d: &Dump) -> DumpInfo {
        DumpInfo {
            path: d.path.clone(),
            framework: d.meta.framework.clone(),
            model: d.meta.model.clone(),
            step: d.meta.step,
            rank: d.meta.rank,
            level: d.meta.level.clone(),
            tensors: d.meta.tensors.clone(),
            dtype: d.meta.dtype.clone(),
            device: d.meta.device.clone(),
            records: d.records.len(),
        }
    }
}

/// One compared record.
#[derive(Debug, Clone, Serialize)]
pub struct RecordDiff {
    /// Position in the baseline's execution order.
    pub order: usize,
    pub key: String,
    pub candidate_key: String,
    pub op: String,
    pub call: u64,
    pub phase: String,
    pub io: String,
    pub index: u32,
    pub scope: String,
    pub shape: Vec<u64>,
    pub baseline_dtype: String,
    pub candidate_dtype: String,
    pub matched_by: MatchedBy,
    /// `full` (tensors compared) or `stats` (statistics compared).
    pub mode: &'static str,
    #[serde(flatten)]
    pub metrics: Metrics,
    /// msprobe's / the stats rule's verdict alone.
    pub rule_verdict: Status,
    pub reference: Option<Arbitration>,
    /// The verdict: the arbitration's where there is one, else the rule's.
    pub verdict: Status,
    /// Why it is not a pass (empty when it is).
    pub reason: String,
}

/// Counts of verdicts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    pub compared: usize,
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    pub only_baseline: usize,
    pub only_candidate: usize,
}

/// The whole diff.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    pub pass: bool,
    pub baseline: DumpInfo,
    pub candidate: DumpInfo,
    pub reference: Option<DumpInfo>,
    pub totals: Totals,
    /// Index into `records` of the first failing record, forward before backward.
    #[serde(skip)]
    pub first_divergence: Option<usize>,
    pub records: Vec<RecordDiff>,
    /// Keys of records with no partner.
    pub only_baseline: Vec<String>,
    pub only_candidate: Vec<String>,
    pub warnings: Vec<String>,
}

impl Diff {
    /// The first failing record.
    pub fn first(&self) -> Option<&RecordDiff> {
        self.first_divergence.map(|i| &self.records[i])
    }
}

/// Read the dump at `path`, in the modelzoo format or msprobe's (see [`dump`] for what `path`
/// may name); `rank` / `step` choose one when a root holds several.
pub fn load(
    path: &std::path::Path,
    rank: Option<u32>,
    step: Option<u64>,
) -> Result<Dump, DiffError> {
    let found = dump::locate(path, rank, step)?;
    if found.extension().is_some_and(|e| e == "json") {
        return msprobe::load(&found);
    }
    dump::load_step_dir(&found)
}

/// Read the dumps `options` names and diff them.
pub fn diff(options: &Options) -> Result<Diff, DiffError> {
    let (b, c) = rayon::join(
        || load(&options.baseline, options.rank, options.step),
        || load(&options.candidate, options.rank, options.step),
    );
    let (b, c) = (b?, c?);
    let r = match &options.reference {
        Some(p) => Some(load(p, options.rank, options.step)?),
        None => None,
    };
    diff_dumps(&b, &c, r.as_ref())
}

/// Diff loaded dumps.
pub fn diff_dumps(b: &Dump, c: &Dump, r: Option<&Dump>) -> Result<Diff, DiffError> {
    let mut warnings = Vec::new();
    same_run(b, c, "candidate", &mut warnings)?;
    if let Some(r) = r {
        same_run(b, r, "reference", &mut warnings)?;
        if r.meta.dtype.as_deref().is_some_and(|d| d != "float64") {
            warnings.push(format!(
                "the reference ran in {}, not float64: it arbitrates only if it is more precise than both",
                r.meta.dtype.as_deref().unwrap_or("?")
            ));
        }
    }
    let pairing = pairing::pair(&b.records, &c.records);
    if pairing.pairs.is_empty() {
        return Err(DiffError::NothingPaired {
            baseline: b.path.clone(),
            candidate: c.path.clone(),
            nb: b.records.len(),
            nc: c.records.len(),
        });
    }
    let full = b.full() && c.full();
    if !full && (b.full() || c.full()) {
        warnings.push("one dump holds statistics only: statistics compared".into());
    }
    let reference_of: Vec<Option<usize>> = match r {
        Some(r) => {
            let p = pairing::pair(&b.records, &r.records);
            let mut v = vec![None; b.records.len()];
            for (i, j, _) in p.pairs {
                v[i] = Some(j);
            }
            let missing = v.iter().filter(|x| x.is_none()).count();
            if missing > 0 {
                warnings.push(format!(
                    "{missing} baseline record(s) have no partner in the reference: judged without arbitration"
                ));
            }
            v
        }
        None => Vec::new(),
    };
    let records: Vec<RecordDiff> = pairing
        .pairs
        .par_iter()
        .map(|&(i, j, by)| {
            let rr = r.zip(reference_of.get(i).copied().flatten());
            compare(b, &b.records[i], c, &c.records[j], rr, full, i, by)
        })
        .collect::<Result<_, _>>()?;
    let mut totals = Totals {
        compared: records.len(),
        only_baseline: pairing.only_baseline.len(),
        only_candidate: pairing.only_candidate.len(),
        ..Totals::default()
    };
    for rd in &records {
        match rd.verdict {
            Status::Pass => totals.pass += 1,
            Status::Warn => totals.warn += 1,
            Status::Fail => totals.fail += 1,
        }
    }
    if totals.only_baseline + totals.only_candidate > 0 {
        warnings.push(format!(
            "{} baseline and {} candidate record(s) have no partner: listed, not judged",
            totals.only_baseline, totals.only_candidate
        ));
    }
    let first_divergence = records
        .iter()
        .enumerate()
        .filter(|(_, rd)| rd.verdict == Status::Fail)
        .min_by_key(|(_, rd)| (rd.phase == "backward", rd.order))
        .map(|(k, _)| k);
    Ok(Diff {
        pass: totals.fail == 0,
        baseline: DumpInfo::of(b),
        candidate: DumpInfo::of(c),
        reference: r.map(DumpInfo::of),
        totals,
        first_divergence,
        records,
        only_baseline: pairing
            .only_baseline
            .iter()
            .map(|&i| b.records[i].key.clone())
            .collect(),
        only_candidate: pairing
            .only_candidate
            .iter()
            .map(|&j| c.records[j].key.clone())
            .collect(),
        warnings,
    })
}

/// Refuse dumps of different models or steps; warn on other differences.
fn same_run(
    b: &Dump,
    o: &Dump,
    other: &'static str,
    warnings: &mut Vec<String>,
) -> Result<(), DiffError> {
    let mismatch = |field: &'static str, x: String, y: String| {
        DiffError::Mismatch(Box::new(Mismatch {
            other,
            field,
            baseline: x,
            value: y,
            baseline_path: b.path.clone(),
            other_path: o.path.clone(),
        }))
    };
    match (&b.meta.model, &o.meta.model) {
        (Some(x), Some(y)) if x != y => return Err(mismatch("model", x.clone(), y.clone())),
        (Some(_), Some(_)) => {}
        _ => warnings.push(format!(
            "the {other} or the baseline does not name its model: not checked"
        )),
    }
    if let (Some(x), Some(y)) = (b.meta.step, o.meta.step) {
        if x != y {
            return Err(mismatch("step", x.to_string(), y.to_string()));
        }
    }
    if let (Some(x), Some(y)) = (b.meta.rank, o.meta.rank) {
        if x != y {
            warnings.push(format!("baseline is rank {x}, the {other} rank {y}"));
        }
    }
    Ok(())
}

fn open_tensor(d: &Dump, r: &Record) -> Result<Npy, DiffError> {
    let path = d.tensor_path(r).ok_or_else(|| DiffError::Read {
        path: d.path.clone(),
        message: format!("record `{}` has no tensor file", r.key),
    })?;
    let t = Npy::open(&path)?;
    if t.shape != r.shape {
        return Err(DiffError::Tensor {
            path,
            message: format!(
                "shape {:?}, but records.jsonl says {:?} for `{}`",
                t.shape, r.shape, r.key
            ),
        });
    }
    Ok(t)
}

#[allow(clippy::too_many_arguments)]
fn compare(
    b: &Dump,
    br: &Record,
    c: &Dump,
    cr: &Record,
    reference: Option<(&Dump, usize)>,
    full: bool,
    order: usize,
    by: MatchedBy,
) -> Result<RecordDiff, DiffError> {
    let rr = reference.map(|(d, j)| (d, &d.records[j]));
    let shapes_differ = br.shape != cr.shape;
    let small = metrics::small_value_threshold_of(&br.dtype, &cr.dtype);
    let (metrics, arbitration, failure) = if shapes_differ {
        (
            Metrics::default(),
            None,
            Some(format!("shape {:?} vs {:?}", br.shape, cr.shape)),
        )
    } else if full {
        let (tb, tc) = (open_tensor(b, br)?, open_tensor(c, cr)?);
        let tr = match rr {
            Some((d, r)) if d.full() && r.shape == br.shape => Some(open_tensor(d, r)?),
            _ => None,
        };
        let (m, a) = metrics::full(&tb, &tc, tr.as_ref(), small);
        let a = a.or_else(|| rr.map(|(_, r)| metrics::stats_arbitration(br, cr, r, small)));
        let f = metrics::full_failure(&m);
        (m, a, f)
    } else {
        let m = metrics::stats(br, cr, small);
        let a = rr
            .filter(|(_, r)| r.shape == br.shape)
            .map(|(_, r)| metrics::stats_arbitration(br, cr, r, small));
        let f = metrics::stats_failure(&m);
        (m, a, f)
    };
    let rule_verdict = if failure.is_some() {
        Status::Fail
    } else {
        Status::Pass
    };
    let non_finite = metrics::non_finite_failure(&metrics, br);
    let verdict = match &arbitration {
        _ if non_finite.is_some() => Status::Fail,
        Some(a) if !shapes_differ => a.verdict,
        _ => rule_verdict,
    };
    let reason =
        match (&arbitration, verdict) {
            (_, Status::Pass) => String::new(),
            _ if non_finite.is_some() => non_finite.unwrap_or_default(),
            (Some(a), v) if !shapes_differ => {
                format!(
            "candidate error {:.3e} is {:.2}× the baseline's {:.3e} against the reference ({})",
            a.candidate_error,
            a.ratio,
            a.baseline_error,
            if v == Status::Warn { "≤ 2: warn" } else { "> 2" }
        )
            }
            _ => failure.unwrap_or_default(),
        };
    Ok(RecordDiff {
        order,
        key: br.key.clone(),
        candidate_key: cr.key.clone(),
        op: br.op.clone(),
        call: br.call,
        phase: br.phase.clone(),
        io: br.io.clone(),
        index: br.index,
        scope: br.scope.clone(),
        shape: br.shape.clone(),
        baseline_dtype: br.dtype.clone(),
        candidate_dtype: cr.dtype.clone(),
        matched_by: by,
        mode: if full { "full" } else { "stats" },
        metrics,
        rule_verdict,
        reference: arbitration,
        verdict,
        reason,
    })
}
