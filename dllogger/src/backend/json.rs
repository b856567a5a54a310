//! tcap_dllogger's JSON stream.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use super::{rank_as_int, Backend};
use crate::call::{Step, Value, Verbosity};
use crate::clock::Timestamp;
use crate::pyfmt::{itoa_buf, write_int, write_py_float};
use crate::rank::rank_from_env;
use crate::record::Metadata;

/// Writes tcap_dllogger's JSON stream: `TCAPPDLL {json}` lines of type METADATA and LOG and
/// `INFO {json}` lines, with the same keys in the same order as tcap.
///
/// Unlike tcap, `data` is a real JSON object with numbers as numbers
/// (`{"rank": 0, "train.loss": 0.55}`); non-finite floats are written as the strings
/// `"nan"`, `"inf"`, `"-inf"` (JSON has no literal for them). The reader accepts both shapes.
///
/// Buffered (64 KiB): lines reach the file when the buffer fills, at the first log call more
/// than one second after the last flush, on [`Logger::flush`](crate::Logger::flush), and when
/// the logger is dropped.
/// A process killed without unwinding (SIGKILL, `std::process::exit`) loses what is buffered.
/// The stream is appended to live, so it is not written through a temporary file.
pub struct JsonStreamBackend {
    verbosity: Verbosity,
    out: BufWriter<Box<dyn Write + Send>>,
    local_rank: u32,
    line: Vec<u8>,
    last_flush: Instant,
}

/// How long buffered JSON lines may wait before a log call pushes them to the file.
const JSON_FLUSH_INTERVAL: Duration = Duration::from_secs(1);

impl JsonStreamBackend {
    /// Creates (or truncates, as tcap does) the JSON log at `path`.
    pub fn create(verbosity: Verbosity, path: impl AsRef<Path>) -> io::Result<Self> {
        Self::open_with(verbosity, path.as_ref(), false)
    }

    /// Appends to the JSON log at `path`, creating it when missing.
    pub fn append(verbosity: Verbosity, path: impl AsRef<Path>) -> io::Result<Self> {
        Self::open_with(verbosity, path.as_ref(), true)
    }

    fn open_with(verbosity: Verbosity, path: &Path, append: bool) -> io::Result<Self> {
        let mut opts = OpenOptions::new();
        opts.create(true);
        if append {
            opts.append(true);
        } else {
            opts.write(true).truncate(true);
        }
        let file: File = opts.open(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot open JSON log {}: {e} (check that the directory exists and is writable)",
                    path.display()
                ),
            )
        })?;
        Ok(Self::with_writer(verbosity, Box::new(file)))
    }

    /// Writes the stream to any writer (tests, a socket).
    pub fn with_writer(verbosity: Verbosity, out: Box<dyn Write + Send>) -> Self {
        JsonStreamBackend {
            verbosity,
            out: BufWriter::with_capacity(64 * 1024, out),
            local_rank: rank_from_env().unwrap_or(0),
            line: Vec::with_capacity(256),
            last_flush: Instant::now(),
        }
    }

    fn emit(&mut self, now: Instant) -> io::Result<()> {
        self.out.write_all(&self.line)?;
        if now.saturating_duration_since(self.last_flush) >= JSON_FLUSH_INTERVAL {
            self.out.flush()?;
            self.last_flush = now;
        }
        Ok(())
    }
}

impl Backend for JsonStreamBackend {
    fn verbosity(&self) -> Verbosity {
        self.verbosity
    }

    fn metadata(&mut self, ts: &Timestamp, metric: &str, md: &Metadata) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(b"TCAPPDLL {\"timestamp\": ");
        write_json_py_float_str(l, ts.unix_seconds());
        l.extend_from_slice(b", \"elapsedtime\": ");
        write_json_py_float_str(l, ts.elapsed_seconds());
        l.extend_from_slice(b", \"datetime\": ");
        write_json_str(l, ts.datetime());
        l.extend_from_slice(b", \"type\": \"METADATA\", \"metric\": ");
        write_json_str(l, metric);
        l.extend_from_slice(b", \"metadata\": {");
        let fields = [
            ("unit", &md.unit),
            ("format", &md.format),
            ("GOAL", &md.goal),
            ("STAGE", &md.stage),
        ];
        let mut first = true;
        for (k, v) in fields {
            if let Some(v) = v {
                if !first {
                    l.extend_from_slice(b", ");
                }
                first = false;
                write_json_str(l, k);
                l.extend_from_slice(b": ");
                write_json_str(l, v);
            }
        }
        l.extend_from_slice(b"}}\n");
        self.emit(ts.instant())
    }

    fn log(
        &mut self,
        ts: &Timestamp,
        step: &Step,
        rank: Option<u32>,
        data: &[(&str, Value)],
    ) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(b"TCAPPDLL {\"timestamp\": ");
        write_json_py_float_str(l, ts.unix_seconds());
        l.extend_from_slice(b", \"datetime\": ");
        write_json_str(l, ts.datetime());
        l.extend_from_slice(b", \"elapsedtime\": ");
        write_json_py_float_str(l, ts.elapsed_seconds());
        l.extend_from_slice(b", \"type\": \"LOG\", \"step\": ");
        match step {
            Step::Text(s) => write_json_str(l, s),
            Step::Epoch(e) => {
                l.push(b'[');
                l.extend_from_slice(itoa_buf(*e).as_slice());
                l.push(b']');
            }
            Step::EpochIter(e, i) => {
                l.push(b'[');
                l.extend_from_slice(itoa_buf(*e).as_slice());
                l.extend_from_slice(b", ");
                l.extend_from_slice(itoa_buf(*i).as_slice());
                l.push(b']');
            }
            Step::EpochIterVal(e, i, v) => {
                l.push(b'[');
                l.extend_from_slice(itoa_buf(*e).as_slice());
                l.extend_from_slice(b", ");
                l.extend_from_slice(itoa_buf(*i).as_slice());
                l.extend_from_slice(b", ");
                l.extend_from_slice(itoa_buf(*v).as_slice());
                l.push(b']');
            }
        }
        l.extend_from_slice(b", \"data\": {");
        let mut first = true;
        if let Some(r) = rank {
            l.extend_from_slice(b"\"rank\": ");
            l.extend_from_slice(itoa_buf(r as u64).as_slice());
            first = false;
        }
        for (k, v) in data {
            if !first {
                l.extend_from_slice(b", ");
            }
            first = false;
            write_json_str(l, k);
            l.extend_from_slice(b": ");
            match (rank_as_int(k, v), v) {
                (Some(r), _) => write_int(l, r),
                (None, Value::Float(x)) if x.is_finite() => write_py_float(l, *x),
                (None, Value::Float(x)) => write_json_py_float_str(l, *x),
                (None, Value::Int(i)) => write_int(l, *i),
                (None, Value::Str(s)) => write_json_str(l, s),
            }
        }
        l.extend_from_slice(b"}}\n");
        self.emit(ts.instant())
    }

    fn info(&mut self, ts: &Timestamp, text: &str) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(b"INFO {\"local_rank\": ");
        l.extend_from_slice(itoa_buf(self.local_rank as u64).as_slice());
        l.extend_from_slice(b", \"datetime\": ");
        write_json_str(l, ts.datetime());
        l.extend_from_slice(b", \"type\": \"INFO\", \"data\": ");
        write_json_str(l, text);
        l.extend_from_slice(b"}\n");
        self.emit(ts.instant())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.last_flush = Instant::now();
        self.out.flush()
    }
}

/// Writes `s` as a JSON string literal (quotes and escapes included).
fn write_json_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &c) in bytes.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(b"0123456789abcdef"[(c >> 4) as usize]);
            out.push(b"0123456789abcdef"[(c & 15) as usize]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Python's `str(float)` as a JSON string: `"1751620651.86237"`.
fn write_json_py_float_str(out: &mut Vec<u8>, x: f64) {
    out.push(b'"');
    write_py_float(out, x);
    out.push(b'"');
}
