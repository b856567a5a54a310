//! Reading the two logs: each streamed once, only the compared metric's series kept.

use std::collections::BTreeMap;
use std::path::Path;

use super::steps::Steps;
use super::{compare_with_noise, CompareError, Comparison, Options, Rule, Series};
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
    read_log(path, role, &[metric], rank)
}

/// [`read_series`] for the first of `metrics` the log has (the default metric and its
/// fallbacks); the series says which it used and why.
pub fn read_series_of_first(
    path: &Path,
    role: &'static str,
    metrics: &[&str],
    rank: u32,
) -> Result<Series, CompareError> {
    read_log(path, role, metrics, rank)
}

fn read_log(
    path: &Path,
    role: &'static str,
    metrics: &[&str],
    rank: u32,
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
    let metric = metrics[chosen.unwrap_or(0)].to_string();
    let metric_note = match chosen {
        Some(k) if k > 0 => Some(format!(
            "no `{}` in this log: the default metric fell back to `{metric}`",
            metrics[0]
        )),
        _ => None,
    };
    let steps = chosen
        .map(|k| std::mem::take(&mut series[k]))
        .unwrap_or_default();
    drop(series);
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
    let names = &names;
    let read = |path: &Path, role: &'static str| -> Result<Series, CompareError> {
        let (series, extraction) = std::thread::scope(|s| {
            let e = with_losspy.then(|| s.spawn(|| losspy::extract(path)));
            let series = read_log(path, role, names, options.rank);
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
                s.spawn(move || read_log(path, "noise", names, options.rank)),
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
