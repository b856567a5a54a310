//! tcap_dllogger's stdout lines.

use std::io::{self, Write};

use super::{rank_as_int, Backend};
use crate::call::{Step, Value, Verbosity};
use crate::clock::Timestamp;
use crate::pyfmt::{itoa_buf, write_int, write_py_float};
use crate::record::Metadata;

/// Prints tcap_dllogger's stdout lines:
/// `TCAPPDLL 2025-05-15 14:20:10.934968 - Epoch: 0 Iteration: 3  rank : 1  train.loss : 0.55  train.ips : 23350.3 imgs/s`.
///
/// Each line goes out in one `write` followed by a flush, so it is visible at once and lines
/// of concurrent ranks do not interleave inside a line (pipes keep writes under 4 KiB whole).
/// METADATA is not printed (as in tcap); `info` prints the text as given.
pub struct StdOutBackend {
    verbosity: Verbosity,
    out: Box<dyn Write + Send>,
    units: std::collections::HashMap<String, String>,
    line: Vec<u8>,
}

impl StdOutBackend {
    /// Writes to the process's stdout.
    pub fn new(verbosity: Verbosity) -> Self {
        Self::with_writer(verbosity, Box::new(io::stdout()))
    }
    /// Writes the same lines to any writer (tests, a tee).
    pub fn with_writer(verbosity: Verbosity, out: Box<dyn Write + Send>) -> Self {
        StdOutBackend {
            verbosity,
            out,
            units: Default::default(),
            line: Vec::with_capacity(256),
        }
    }

    fn emit(&mut self) -> io::Result<()> {
        self.out.write_all(&self.line)?;
        self.out.flush()
    }
}

/// Writes tcap's `format_step`: `Epoch: 0 Iteration: 3 ` (trailing space) or the text.
fn write_step_text(out: &mut Vec<u8>, step: &Step) {
    let mut put = |label: &[u8], v: u64| {
        out.extend_from_slice(label);
        out.extend_from_slice(itoa_buf(v).as_slice());
        out.push(b' ');
    };
    match step {
        Step::Epoch(e) => put(b"Epoch: ", *e),
        Step::EpochIter(e, i) => {
            put(b"Epoch: ", *e);
            put(b"Iteration: ", *i);
        }
        Step::EpochIterVal(e, i, v) => {
            put(b"Epoch: ", *e);
            put(b"Iteration: ", *i);
            put(b"Validation Iteration: ", *v);
        }
        Step::Text(s) => out.extend_from_slice(s.as_bytes()),
    }
}

impl Backend for StdOutBackend {
    fn verbosity(&self) -> Verbosity {
        self.verbosity
    }

    fn metadata(&mut self, _: &Timestamp, metric: &str, metadata: &Metadata) -> io::Result<()> {
        match &metadata.unit {
            Some(u) => self.units.insert(metric.to_owned(), u.clone()),
            None => self.units.remove(metric),
        };
        Ok(())
    }

    fn log(
        &mut self,
        ts: &Timestamp,
        step: &Step,
        rank: Option<u32>,
        data: &[(&str, Value)],
    ) -> io::Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        line.extend_from_slice(b"TCAPPDLL ");
        line.extend_from_slice(ts.datetime().as_bytes());
        line.extend_from_slice(b" - ");
        write_step_text(&mut line, step);
        line.push(b' ');
        // tcap: " ".join("{metric} : {value} {unit}") — the unit is "" when absent, which
        // leaves the trailing space that makes the two-space separators.
        let mut first = true;
        if let Some(r) = rank {
            line.extend_from_slice(b"rank : ");
            line.extend_from_slice(itoa_buf(r as u64).as_slice());
            line.push(b' ');
            line.extend_from_slice(self.units.get("rank").map_or("", |u| u).as_bytes());
            first = false;
        }
        for (k, v) in data {
            if !first {
                line.push(b' ');
            }
            first = false;
            line.extend_from_slice(k.as_bytes());
            line.extend_from_slice(b" : ");
            write_value_py(&mut line, k, v);
            line.push(b' ');
            if let Some(u) = self.units.get(*k) {
                line.extend_from_slice(u.as_bytes());
            }
        }
        line.push(b'\n');
        self.line = line;
        self.emit()
    }

    fn info(&mut self, _: &Timestamp, text: &str) -> io::Result<()> {
        self.line.clear();
        self.line.extend_from_slice(text.as_bytes());
        self.line.push(b'\n');
        self.emit()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

fn write_value_py(out: &mut Vec<u8>, key: &str, v: &Value) {
    if let Some(r) = rank_as_int(key, v) {
        return write_int(out, r);
    }
    match v {
        Value::Float(x) => write_py_float(out, *x),
        Value::Int(i) => write_int(out, *i),
        Value::Str(s) => out.extend_from_slice(s.as_bytes()),
    }
}
