//! Reading the two logs: each streamed once, only the compared metric's series kept.

use std::collections::BTreeMap;
use std::path::Path;

use super::steps::Steps;
use super::{compare_with_noise, CompareError, Comparison, Options, Rule, Series};
use crate::devices::{first_evidence, Device};
use crate::losspy;

/// The default metric, and what it falls back to (in this order) when a log has none of it:
/// the names scripts that do not use tcap_dllogger print (`Epoch[3]: train_loss …`, `loss x`).
pub const DEFAULT_METRIC: &str = "train.loss";
pub const METRIC_FALLBACKS: [&str; 2] = ["train_loss", "loss"];

/// What the driver's `FINISHED` event says about the run that a comparison checks too.
const FINISHED_FACTS: [&str; 3] = ["steps", "world_size", "num_params"];

/// Stream one log and keep the selected metric's series. `role` names it in errors.
pub fn read_series(
    path: &Path,
    role: &'static str,
    metric: &str,
    rank: u32,
) -> Result<Series, CompareError> {
    read_log(path, role, &[metric], rank, false)
}

/// [`read_series`] for the first of `metrics` the log has (the default metric and its
/// fallbacks); the series says which it used and why.
pub fn read_series_of_first(
    path: &Path,
    role: &'static str,
    metrics: &[&str],
    rank: u32,
) -> Result<Series, CompareError> {
    read_log(path, role, metrics, rank, false)
}

/// Whether `name` is a training loss of the loss-line rule: a `loss` part (`loss`,
/// `Loss_D`, `loss_cls`, `train.avg_loss`), not an evaluation's (`val.loss`, `val_loss`).
pub fn is_training_loss(name: &str) -> bool {
    !(name.starts_with("val.") || name.starts_with("val_"))
        && name
            .split(['_', '.'])
            .any(|p| p.eq_ignore_ascii_case("loss"))
}

/// The named losses of one line (`Loss_D`, `Loss_G`) being collected, for a log with none of
/// the metrics asked for: the names of the first record that has such losses, and their
/// values in every record.
#[derive(Default)]
struct Named {
    names: Vec<String>,
    steps: Vec<Steps>,
}

impl Named {
    fn push(&mut self, record: &dllogger::Record) {
        for (name, value) in &record.metrics {
            if let Some(k) = self.names.iter().position(|n| n == name) {
                self.steps[k].push(record.epoch, record.iteration, record.val_iteration, *value);
            }
        }
    }
}

/// Streams one log, keeping the series of the first of `metrics` it has; with `named`, a log
/// with none of them gives the named losses of its first line that has some (per-step losses
/// before epoch averages, `train.avg_*`): the first as the series, the others in
/// [`Series::named`].
fn read_log(
    path: &Path,
    role: &'static str,
    metrics: &[&str],
    rank: u32,
    named: bool,
) -> Result<Series, CompareError> {
    let mut reader = dllogger::open(path).map_err(|e| CompareError::Read {
        role,
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut series: Vec<Steps> = metrics.iter().map(|_| Steps::new()).collect();
    let mut best = metrics.len();
    let mut eval_last: BTreeMap<String, f64> = BTreeMap::new();
    let mut metrics_seen: Vec<String> = Vec::new();
    let mut ranks_seen: Vec<u32> = Vec::new();
    let mut facts: BTreeMap<String, String> = BTreeMap::new();
    // Per-step named losses, and epoch averages (used only when there are no per-step ones).
    let (mut per_step, mut averages) = (Named::default(), Named::default());
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
        if record.step_name.as_deref() == Some("FINISHED") {
            for (name, value) in &record.metrics {
                if FINISHED_FACTS.contains(&name.as_str()) && !facts.contains_key(name) {
                    facts.insert(name.clone(), value.to_string());
                }
            }
        }
        if named && best == metrics.len() {
            if per_step.names.is_empty() {
                let losses = record
                    .metrics
                    .iter()
                    .map(|(k, _)| k)
                    .filter(|k| is_training_loss(k) && !metrics.contains(&k.as_str()));
                let (avg, step): (Vec<&String>, Vec<&String>) =
                    losses.partition(|k| k.starts_with("train.avg_"));
                for (list, found) in [(&mut per_step, step), (&mut averages, avg)] {
                    if list.names.is_empty() && !found.is_empty() {
                        list.names = found.into_iter().take(64).cloned().collect();
                        list.steps = vec![Steps::new(); list.names.len()];
                    }
                }
            }
            per_step.push(&record);
            averages.push(&record);
        }
        for (name, value) in &record.metrics {
            // Only the best-ranked name seen so far is kept: a fallback's values are dropped
            // as soon as a name before it appears.
            if let Some(k) = metrics
                .iter()
                .position(|m| m == name)
                .filter(|&k| k <= best)
            {
                if k < best {
                    best = k;
                    series[k + 1..].iter_mut().for_each(Steps::clear);
                }
                series[k].push(record.epoch, record.iteration, record.val_iteration, *value);
            }
            if name.starts_with("val.") || name.starts_with("val_") {
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
    for (k, v) in reader.parameters() {
        facts.entry(k.clone()).or_insert_with(|| v.clone());
    }
    ranks_seen.sort_unstable();
    metrics_seen.sort();
    let chosen = series.iter().position(|s| !s.is_empty());
    let mut metric = metrics[chosen.unwrap_or(0)].to_string();
    let mut metric_note = match chosen {
        Some(k) if k > 0 => Some(format!(
            "no `{}` in this log: the default metric fell back to `{metric}`",
            metrics[0]
        )),
        _ => None,
    };
    let mut steps = chosen
        .map(|k| std::mem::take(&mut series[k]))
        .unwrap_or_default();
    drop(series);
    let mut others = Vec::new();
    let named = if per_step.names.is_empty() {
        averages
    } else {
        per_step
    };
    if chosen.is_none() && !named.names.is_empty() {
        metric_note = Some(format!(
            "no `{}` in this log: its losses are the named losses of one line, `{}`{}",
            metrics.join("`, `"),
            named.names.join("`, `"),
            if named.names.len() > 1 {
                ": each is compared, the verdict is the worst"
            } else {
                ""
            }
        ));
        let mut pairs = named.names.into_iter().zip(named.steps);
        if let Some((name, first)) = pairs.next() {
            metric = name;
            steps = first;
        }
        others = pairs.collect();
    }
    let series = Series {
        path: path.to_path_buf(),
        metric,
        metric_note,
        values: steps.len(),
        steps,
        eval_last,
        metrics_seen,
        ranks_seen,
        facts,
        lines: stats.lines,
        records: stats.records,
        malformed: stats.malformed,
        bytes: stats.bytes,
        overlong_lines: stats.overlong,
        overlong_unread: stats.overlong_unread,
        losspy: None,
        named: others,
    };
    if series.steps.is_empty() {
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
            metric: metrics[0].to_string(),
            fallbacks: metrics[1..].iter().map(|m| m.to_string()).collect(),
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
    let mut names = vec![options.metric.as_str()];
    if options.metric_fallback && options.metric == DEFAULT_METRIC {
        names.extend(METRIC_FALLBACKS);
    }
    let named = options.metric_fallback && options.metric == DEFAULT_METRIC;
    let names = &names;
    let read = |path: &Path, role: &'static str| -> Result<Series, CompareError> {
        let (series, extraction) = std::thread::scope(|s| {
            let e = with_losspy.then(|| s.spawn(|| losspy::extract(path)));
            let series = read_log(path, role, names, options.rank, named);
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
    let (b, c, n, evidence) = std::thread::scope(|s| {
        let evidence = s.spawn(|| first_evidence(baseline, Device::Cuda));
        let b = s.spawn(|| read(baseline, "baseline"));
        let n = options.noise.as_deref().map(|path| {
            (
                path,
                s.spawn(move || read_log(path, "noise", names, options.rank, named)),
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
        (b, c, n, evidence.join().ok().flatten())
    });
    let (b, c, n) = (b?, c?, n.transpose()?);
    let mut cmp = if b.named.is_empty() && c.named.is_empty() {
        compare_with_noise(b, c, n, options)?
    } else {
        each_named(b, c, n, options)?
    };
    // validate's logs.device rule, on the log that is to be the CUDA run.
    if let Some((line, what)) = evidence {
        cmp.verdict.warnings.push(format!(
            "the baseline is to be the CUDA run, but it is an SDAA run: its line {line} holds {what} — this compares SDAA with SDAA, not SDAA against CUDA; give the log of a CUDA run as --baseline"
        ));
    }
    Ok(cmp)
}

/// Logs whose losses are several named losses of one line (`Loss_D`, `Loss_G`): each is
/// compared with the candidate's of the same name, and the worst comparison (a failing one
/// before a passing one, then the largest relative error of the final value) is the result,
/// its warnings giving every loss's verdict.
fn each_named(
    mut b: Series,
    mut c: Series,
    mut n: Option<Series>,
    options: &Options,
) -> Result<Comparison, CompareError> {
    let b_named = std::mem::take(&mut b.named);
    let c_named = std::mem::take(&mut c.named);
    let n_named = n.as_mut().map(|n| std::mem::take(&mut n.named));
    let names: Vec<String> = std::iter::once(b.metric.clone())
        .chain(b_named.iter().map(|(k, _)| k.clone()))
        .collect();
    let listed = |s: &Series, named: &[(String, Steps)]| {
        std::iter::once(s.metric.as_str())
            .chain(named.iter().map(|(k, _)| k.as_str()))
            .collect::<Vec<_>>()
            .join("`, `")
    };
    let pick = |s: &Series,
                named: &[(String, Steps)],
                role: &'static str,
                name: &str|
     -> Result<Series, CompareError> {
        let steps = if s.metric == name {
            s.steps.clone()
        } else {
            match named.iter().find(|(k, _)| k == name) {
                Some((_, steps)) => steps.clone(),
                None => {
                    return Err(CompareError::MetricAbsent {
                        role,
                        path: s.path.clone(),
                        metric: name.to_string(),
                        fallbacks: Vec::new(),
                        rank: options.rank,
                        seen: format!(
                        "the baseline's losses are the named losses `{}`; the {role}'s are `{}`",
                        names.join("`, `"),
                        listed(s, named)
                    ),
                    })
                }
            }
        };
        Ok(Series {
            metric: name.to_string(),
            values: steps.len(),
            steps,
            ..s.clone()
        })
    };
    let mut results = Vec::with_capacity(names.len());
    for name in &names {
        let bs = pick(&b, &b_named, "baseline", name)?;
        let cs = pick(&c, &c_named, "candidate", name)?;
        let ns = match (&n, &n_named) {
            (Some(n), Some(named)) => Some(pick(n, named, "noise", name)?),
            _ => None,
        };
        results.push(compare_with_noise(bs, cs, ns, options)?);
    }
    let badness = |r: &Comparison| {
        let e = r.figures.final_rel_err.abs();
        (!r.verdict.pass, if e.is_nan() { f64::INFINITY } else { e })
    };
    let worst = (0..results.len())
        .max_by(|&i, &j| {
            let (a, b) = (badness(&results[i]), badness(&results[j]));
            a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(j.cmp(&i))
        })
        .unwrap_or(0);
    let each: Vec<String> = results
        .iter()
        .map(|r| {
            format!(
                "`{}` {} (|relative error of the final value| {})",
                r.metric,
                if r.verdict.pass { "PASS" } else { "FAIL" },
                super::pct(r.figures.final_rel_err.abs())
            )
        })
        .collect();
    let mut cmp = results.swap_remove(worst);
    cmp.verdict.warnings.insert(
        0,
        format!(
            "no plain loss: the logs' losses are {} named losses of one line, each compared — {}; this report is the worst, `{}` (compare one with --metric NAME)",
            names.len(),
            each.join(", "),
            cmp.metric
        ),
    );
    Ok(cmp)
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
