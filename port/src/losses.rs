//! Which loss a run logged, and where: the file `--log` names, or the run's own console output
//! (every format the dllogger reader knows — tcap_dllogger's stdout and JSON lines, NVIDIA
//! DLLogger, and plain `loss 1.23` / `step 3 loss 1.23` lines).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The metrics tried, in order: the ModelZoo's name, then the names scripts print.
pub const LOSS_METRICS: &[&str] = &["train.loss", "train_loss", "loss"];

/// Where a run's losses are.
#[derive(Debug, Clone, PartialEq)]
pub struct LossSource {
    pub path: PathBuf,
    pub metric: String,
    /// Values of `metric` for rank 0.
    pub values: usize,
}

/// The loss series of one run: in `log` (relative to the run's directory `dir`) when given,
/// else in its `console`. Err says what was looked at and what to do.
pub fn find(dir: &Path, console: &Path, log: Option<&Path>) -> Result<LossSource, String> {
    let path = match log {
        Some(log) => {
            let path = dir.join(log);
            if !path.is_file() {
                return Err(format!(
                    "--log {}: the run wrote no such file ({} is {})",
                    log.display(),
                    path.display(),
                    if path.exists() {
                        "not a regular file"
                    } else {
                        "missing"
                    }
                ));
            }
            path
        }
        None => console.to_path_buf(),
    };
    let counts = metric_counts(&path)?;
    for metric in LOSS_METRICS {
        if let Some(&values) = counts.get(*metric) {
            return Ok(LossSource {
                path,
                metric: (*metric).to_string(),
                values,
            });
        }
    }
    let seen = if counts.is_empty() {
        "no metric lines at all".to_string()
    } else {
        format!(
            "metrics seen: {}",
            counts.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    };
    Err(format!(
        "no loss ({}) in {} ({seen}); print lines such as `step 3 loss 1.234` on rank 0, log \
         `train.loss` with tcap_dllogger (docs/python_logger.md), or give the log file the \
         script writes with --log FILE",
        LOSS_METRICS.join(", "),
        path.display()
    ))
}

/// Values per metric name for rank 0.
fn metric_counts(path: &Path) -> Result<BTreeMap<String, usize>, String> {
    let mut reader = dllogger::open(path).map_err(|e| e.to_string())?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    while let Some(record) = reader.try_next().map_err(|e| e.to_string())? {
        if record.rank != 0 {
            continue;
        }
        for (name, _) in &record.metrics {
            *counts.entry(name.clone()).or_default() += 1;
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modelzoo_name_first_then_plain_loss_lines_and_a_clear_miss() {
        let tmp = tempfile::tempdir().unwrap();
        let console = tmp.path().join("console.log");
        std::fs::write(&console, "banner\nstep 0 loss 2.5\nstep 1 loss 2.25\n").unwrap();
        let found = find(tmp.path(), &console, None).unwrap();
        assert_eq!((found.metric.as_str(), found.values), ("loss", 2));

        std::fs::write(
            &console,
            "TCAPPDLL 2026-01-01 00:00:00.000000 - Epoch: 0 Iteration: 1  rank : 0  train.loss : 2.5 \n",
        )
        .unwrap();
        assert_eq!(
            find(tmp.path(), &console, None).unwrap().metric,
            "train.loss"
        );

        std::fs::write(&console, "nothing to see\n").unwrap();
        let err = find(tmp.path(), &console, None).unwrap_err();
        assert!(err.contains("--log FILE"), "{err}");
        let err = find(tmp.path(), &console, Some(Path::new("out/log.json"))).unwrap_err();
        assert!(err.contains("missing"), "{err}");
    }
}
