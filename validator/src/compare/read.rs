//! Reading the two logs: each streamed once, only the compared metric's series kept.

use std::collections::BTreeMap;
use std::path::Path;

use super::{compare_with_noise, CompareError, Comparison, Key, Options, Point, Rule, Series};
use crate::losspy;

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
