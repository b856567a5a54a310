//! Reading what a command left: its log (a finite `train.loss`, `train.ips` > 0, no NaN/inf,
//! the listed metrics) and its console. Every file is opened with
//! `model_config::files::open_regular` — a FIFO or device is named, never read — and the
//! reading runs under what is left of the entry's timeout, so no file can stall the check.

use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Instant;

use dllogger::{LogFormat, LogReader};

use crate::Stage;

/// What a log must hold.
#[derive(Debug, Clone)]
pub(crate) struct Wanted {
    /// Metrics that must appear.
    pub metrics: Vec<String>,
    /// At least one `train.ips` (a model.yaml entry's log); otherwise only each present one
    /// must be > 0.
    pub ips_required: bool,
    /// Read only tcap_dllogger lines (`TCAPPDLL …`): a console also carries other tools'
    /// output, which must not pass for the model's log.
    pub tcap_only: bool,
}

/// Runs `f` and returns its value, unless `deadline` passes first (`None`). The work runs on a
/// thread of its own, left behind when the deadline passes: nothing the check reads can hold
/// up the rest of the PR check.
pub(crate) fn before<T: Send + 'static>(
    deadline: Option<Instant>,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let Some(deadline) = deadline else {
        return Some(f());
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("ci-log-check".into())
        .spawn(move || {
            let _ = tx.send(f());
        });
    if spawned.is_err() {
        return None;
    }
    rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .ok()
}

/// Reads the log a model wrote: at least one finite `train.loss`, every `train.ips` > 0 (and
/// at least one), no NaN/inf anywhere, every metric in `metrics` present.
pub fn check_log(path: &Path, metrics: &[String]) -> Stage {
    check(
        path,
        &Wanted {
            metrics: metrics.to_vec(),
            ips_required: true,
            tcap_only: false,
        },
    )
}

/// Reads a ModelZoo case's console output: its tcap_dllogger lines hold at least one
/// `train.loss`, every value is finite, every `train.ips` there is > 0. Other lines (banners,
/// warnings, plain `loss` prints) are not read as metrics.
pub fn check_console(path: &Path) -> Stage {
    check(
        path,
        &Wanted {
            metrics: Vec::new(),
            ips_required: false,
            tcap_only: true,
        },
    )
}

pub(crate) fn check(path: &Path, wanted: &Wanted) -> Stage {
    let file = match model_config::files::open_regular(path) {
        Ok(f) => f,
        Err(e) => return Stage::Fail(format!("no log: {}: {e}", path.display())),
    };
    let mut reader = LogReader::new(BufReader::with_capacity(256 * 1024, file));
    let mut records = 0u64;
    let mut other_formats = 0u64;
    let mut losses = 0u64;
    let mut ips_ok = 0u64;
    let mut seen: Vec<bool> = vec![false; wanted.metrics.len()];
    while let Some((format, rec)) = reader.next_tagged() {
        if wanted.tcap_only && !matches!(format, LogFormat::TcapStdout | LogFormat::TcapJson) {
            other_formats += 1;
            continue;
        }
        records += 1;
        let at = || match (rec.epoch, rec.iteration) {
            (Some(e), Some(i)) => format!("epoch {e} iteration {i}"),
            (None, Some(i)) => format!("iteration {i}"),
            _ => format!("record {records}"),
        };
        for (name, value) in &rec.metrics {
            if !value.is_finite() {
                return Stage::Fail(format!(
                    "{}: {name} = {value} at {} (rank {})",
                    path.display(),
                    at(),
                    rec.rank
                ));
            }
            if let Some(i) = wanted.metrics.iter().position(|m| m == name) {
                seen[i] = true;
            }
            match name.as_str() {
                "train.loss" => losses += 1,
                "train.ips" if *value <= 0.0 => {
                    return Stage::Fail(format!(
                        "{}: train.ips = {value} at {} (must be > 0)",
                        path.display(),
                        at()
                    ))
                }
                "train.ips" => ips_ok += 1,
                _ => {}
            }
        }
    }
    if let Some(e) = reader.error() {
        return Stage::Fail(format!(
            "{}: unreadable after {} bytes: {e}",
            path.display(),
            reader.stats().bytes
        ));
    }
    if losses == 0 {
        let ignored = if wanted.tcap_only && other_formats > 0 {
            format!(
                " ({other_formats} records in other formats not read: the check reads \
                 tcap_dllogger lines, `TCAPPDLL … train.loss : …`)"
            )
        } else {
            String::new()
        };
        let kind = if wanted.tcap_only {
            "tcap_dllogger records"
        } else {
            "records"
        };
        return Stage::Fail(format!(
            "{}: no train.loss in {records} {kind}{ignored}",
            path.display()
        ));
    }
    if wanted.ips_required && ips_ok == 0 {
        return Stage::Fail(format!(
            "{}: no train.ips in {records} records",
            path.display()
        ));
    }
    let missing: Vec<&str> = wanted
        .metrics
        .iter()
        .zip(&seen)
        .filter(|(_, s)| !**s)
        .map(|(m, _)| m.as_str())
        .collect();
    if !missing.is_empty() {
        return Stage::Fail(format!(
            "{}: metrics listed in model.yaml never logged: {}",
            path.display(),
            missing.join(", ")
        ));
    }
    Stage::Pass(format!("{records} records, {losses} train.loss"))
}

/// The last non-empty line of the console log, for failure messages; reads at most its last
/// 64 KiB, and only when it is a regular file (a command may leave a FIFO in its place).
pub(crate) fn console_tail(path: &Path) -> String {
    let mut file = match model_config::files::open_regular(path) {
        Ok(f) => f,
        Err(e) => return format!("(console {} not read: {e})", path.display()),
    };
    const TAIL: u64 = 64 * 1024;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > TAIL {
        let _ = file.seek(SeekFrom::Start(len - TAIL));
    }
    let mut bytes = Vec::new();
    let _ = file.take(TAIL).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(none)");
    let line = line.trim();
    if line.chars().count() > 200 {
        format!("{}…", line.chars().take(200).collect::<String>())
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// What the check reads is bounded by the entry's deadline, whatever blocks it.
    #[test]
    fn work_past_the_deadline_is_abandoned() {
        let started = Instant::now();
        let got = before(Some(started + Duration::from_millis(200)), || {
            std::thread::sleep(Duration::from_secs(30));
            1
        });
        assert_eq!(got, None);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(
            before(Some(Instant::now() + Duration::from_secs(5)), || 2),
            Some(2)
        );
        assert_eq!(before(None, || 3), Some(3));
    }
}
