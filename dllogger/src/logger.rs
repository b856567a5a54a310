//! The tcap_dllogger-compatible writer: [`Logger`] fans each call out to its [`Backend`]s.

use std::io;

use crate::backend::Backend;
use crate::call::{Step, Value, Verbosity};
use crate::clock::Clock;
use crate::rank::rank_from_env;
use crate::record::Metadata;

/// The logger every model uses: `metadata`, `log`, `info` go to each backend.
///
/// Each `log` also carries the process's rank (first, as `rank`) unless the data has a `rank`
/// entry itself, so the ModelZoo's `rank : 0  train.loss : ...` regexes always match. The rank
/// is [`rank_from_env`] or 0; change it with [`Logger::with_rank`].
///
/// Writing never interrupts training: a backend I/O error is reported once through `tracing`
/// and kept; [`Logger::finish`] returns the first one. Buffered lines are flushed on
/// [`Logger::flush`] and when the logger is dropped. Rust runs no destructors for statics or
/// on `std::process::exit`: keep the logger in `main`'s scope (or call `flush`) so the JSON
/// stream is complete at exit.
pub struct Logger {
    backends: Vec<Box<dyn Backend>>,
    failed: Vec<bool>,
    first_error: Option<io::Error>,
    clock: Clock,
    rank: Option<u32>,
}

impl Logger {
    pub fn new(backends: Vec<Box<dyn Backend>>) -> Self {
        Logger {
            failed: vec![false; backends.len()],
            backends,
            first_error: None,
            clock: Clock::new(),
            rank: Some(rank_from_env().unwrap_or(0)),
        }
    }

    /// Sets the rank added to each log (`None`: add none, exactly like tcap).
    pub fn with_rank(mut self, rank: Option<u32>) -> Self {
        self.rank = rank;
        self
    }

    fn record(&mut self, idx: usize, r: io::Result<()>) {
        if let Err(e) = r {
            if !self.failed[idx] {
                self.failed[idx] = true;
                tracing::error!(
                    "dllogger backend {idx} failed to write: {e}; metrics may be missing from it"
                );
            }
            self.first_error.get_or_insert(e);
        }
    }

    /// Declares a metric's unit, format, goal and stage (tcap's `metadata(metric, {...})`).
    pub fn metadata(&mut self, metric: &str, metadata: Metadata) {
        let ts = self.clock.now();
        for i in 0..self.backends.len() {
            if self.backends[i].verbosity() == Verbosity::Off {
                continue;
            }
            let r = self.backends[i].metadata(&ts, metric, &metadata);
            self.record(i, r);
        }
    }

    /// Logs one step's values to every backend whose verbosity admits `verbosity`.
    pub fn log(&mut self, step: impl Into<Step>, data: &[(&str, Value)], verbosity: Verbosity) {
        if verbosity == Verbosity::Off {
            return;
        }
        let step = step.into();
        let ts = self.clock.now();
        let rank = if data.iter().any(|(k, _)| *k == "rank") {
            None
        } else {
            self.rank
        };
        for i in 0..self.backends.len() {
            let bv = self.backends[i].verbosity();
            if bv == Verbosity::Off || bv < verbosity {
                continue;
            }
            let r = self.backends[i].log(&ts, &step, rank, data);
            self.record(i, r);
        }
    }

    /// Writes a free-form message (stdout: as is; JSON: an `INFO {json}` line).
    pub fn info(&mut self, text: &str) {
        let ts = self.clock.now();
        for i in 0..self.backends.len() {
            if self.backends[i].verbosity() == Verbosity::Off {
                continue;
            }
            let r = self.backends[i].info(&ts, text);
            self.record(i, r);
        }
    }

    /// Pushes every backend's buffered lines out.
    pub fn flush(&mut self) {
        for i in 0..self.backends.len() {
            let r = self.backends[i].flush();
            self.record(i, r);
        }
    }

    /// Flushes and returns the first I/O error any backend hit, so a caller can fail the run
    /// when its metrics did not all reach disk.
    pub fn finish(mut self) -> io::Result<()> {
        self.flush();
        match self.first_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Logger {
    fn drop(&mut self) {
        self.flush();
    }
}
