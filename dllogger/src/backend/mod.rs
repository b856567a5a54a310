//! Where the [`Logger`](crate::Logger)'s lines go: the [`Backend`] trait and the two tcap
//! formats, stdout lines ([`StdOutBackend`]) and the JSON stream ([`JsonStreamBackend`]).

use std::io;

use crate::call::{Step, Value, Verbosity};
use crate::clock::Timestamp;
use crate::record::Metadata;

mod json;
mod stdout;

pub use json::JsonStreamBackend;
pub use stdout::StdOutBackend;

/// A destination for log records. Implement it to add a backend (TensorBoard, a socket, ...).
///
/// `log` receives `rank` = the rank the [`Logger`](crate::Logger) adds to the data (first, as
/// `rank`) when the data has no `rank` entry of its own; `None` means add nothing.
pub trait Backend: Send {
    /// The most detailed verbosity this backend writes.
    fn verbosity(&self) -> Verbosity;
    /// Records what a metric means (unit, format, goal, stage).
    fn metadata(&mut self, ts: &Timestamp, metric: &str, metadata: &Metadata) -> io::Result<()>;
    /// Writes one step's values.
    fn log(
        &mut self,
        ts: &Timestamp,
        step: &Step,
        rank: Option<u32>,
        data: &[(&str, Value)],
    ) -> io::Result<()>;
    /// Writes a free-form message.
    fn info(&mut self, ts: &Timestamp, text: &str) -> io::Result<()>;
    /// Pushes buffered lines to their destination.
    fn flush(&mut self) -> io::Result<()>;
}

/// tcap writes a non-string `rank` as `int(value)`.
pub(crate) fn rank_as_int(key: &str, v: &Value) -> Option<i64> {
    match v {
        Value::Float(x) if key == "rank" && x.is_finite() && x.fract() == 0.0 => Some(*x as i64),
        _ => None,
    }
}
