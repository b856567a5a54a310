//! The tcap_dllogger-compatible writer: [`Logger`] fans each call out to its [`Backend`]s.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::pyfmt::{itoa_buf, write_int, write_py_float};

/// How much a backend writes, as in tcap_dllogger (`OFF=-1`, `DEFAULT=0`, `VERBOSE=1`).
///
/// A backend writes a `log` call when the call's verbosity is at most the backend's. An `Off`
/// backend writes nothing at all (tcap would still write metadata to it), and a `log` call at
/// `Off` is never written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verbosity {
    Off,
    Default,
    Verbose,
}

impl Verbosity {
    /// The integer tcap_dllogger uses for this level.
    pub fn as_tcap(self) -> i32 {
        match self {
            Verbosity::Off => -1,
            Verbosity::Default => 0,
            Verbosity::Verbose => 1,
        }
    }
}

/// Where in training a `log` call happened: tcap's `(epoch)`, `(epoch, iteration)`,
/// `(epoch, iteration, validation iteration)` tuples, or a free string such as `"PARAMETER"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Epoch(u64),
    EpochIter(u64, u64),
    EpochIterVal(u64, u64, u64),
    Text(String),
}

impl From<u64> for Step {
    fn from(e: u64) -> Self {
        Step::Epoch(e)
    }
}
impl From<(u64, u64)> for Step {
    fn from((e, i): (u64, u64)) -> Self {
        Step::EpochIter(e, i)
    }
}
impl From<(u64, u64, u64)> for Step {
    fn from((e, i, v): (u64, u64, u64)) -> Self {
        Step::EpochIterVal(e, i, v)
    }
}
impl From<&str> for Step {
    fn from(s: &str) -> Self {
        Step::Text(s.to_owned())
    }
}
impl From<String> for Step {
    fn from(s: String) -> Self {
        Step::Text(s)
    }
}

/// One logged value. Floats keep full precision (Python `str(float)` shape on stdout).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Float(f64),
    Int(i64),
    Str(String),
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<f32> for Value {
    /// Widened exactly as Python's `float(tensor.item())` is, so `0.5533216595649719` stays.
    fn from(v: f32) -> Self {
        Value::Float(v as f64)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<u64> for Value {
    /// Values above `i64::MAX` become floats rather than wrapping.
    fn from(v: u64) -> Self {
        i64::try_from(v).map_or(Value::Float(v as f64), Value::Int)
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::from(v as u64)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}

/// What a metric means, written once as a METADATA record (`unit`, `format`, `GOAL`, `STAGE`).
/// The stdout backend appends `unit` after each value of the metric (`imgs/s`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    pub unit: Option<String>,
    pub format: Option<String>,
    pub goal: Option<String>,
    pub stage: Option<String>,
}

impl Metadata {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn with_unit(mut self, unit: impl Into<String>) -> Self {
        self.unit = Some(unit.into());
        self
    }
    pub fn with_format(mut self, format: impl Into<String>) -> Self {
        self.format = Some(format.into());
        self
    }
    pub fn with_goal(mut self, goal: impl Into<String>) -> Self {
        self.goal = Some(goal.into());
        self
    }
    pub fn with_stage(mut self, stage: impl Into<String>) -> Self {
        self.stage = Some(stage.into());
        self
    }
}

/// The moment of one logger call, computed once and shared by every backend.
#[derive(Debug, Clone)]
pub struct Timestamp {
    unix_secs: u64,
    micros: u32,
    elapsed_micros: u64,
    datetime: [u8; 26],
    datetime_len: usize,
    instant: Instant,
}

impl Timestamp {
    /// Local time as Python's `str(datetime.now())`: `2025-05-15 14:20:10.934968`
    /// (no fraction when the microsecond is 0, as Python prints it).
    pub fn datetime(&self) -> &str {
        std::str::from_utf8(&self.datetime[..self.datetime_len]).unwrap_or("")
    }
    /// Seconds since the Unix epoch, microsecond resolution (Python `datetime.timestamp()`).
    pub fn unix_seconds(&self) -> f64 {
        self.unix_secs as f64 + self.micros as f64 / 1e6
    }
    /// Seconds since the logger was created (Python `timedelta.total_seconds()`).
    pub fn elapsed_seconds(&self) -> f64 {
        self.elapsed_micros as f64 / 1e6
    }
    /// Monotonic instant of the call, for backends that flush on a timer.
    pub fn instant(&self) -> Instant {
        self.instant
    }
}

/// Makes [`Timestamp`]s; the local-time formatting of the seconds is cached so that a log call
/// costs no time-zone lookup unless the second changed.
struct Clock {
    start: Instant,
    cached_sec: u64,
    cached: [u8; 19],
}

impl Clock {
    fn new() -> Self {
        Clock {
            start: Instant::now(),
            cached_sec: u64::MAX,
            cached: [b'0'; 19],
        }
    }

    fn now(&mut self) -> Timestamp {
        let instant = Instant::now();
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        let (secs, micros) = (since.as_secs(), since.subsec_micros());
        if secs != self.cached_sec {
            use chrono::TimeZone;
            let text = i64::try_from(secs)
                .ok()
                .and_then(|s| chrono::Local.timestamp_opt(s, 0).single())
                .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                .unwrap_or_else(|| "1970-01-01 00:00:00".to_owned());
            let n = text.len().min(19);
            self.cached[..n].copy_from_slice(&text.as_bytes()[..n]);
            self.cached_sec = secs;
        }
        let mut datetime = [0u8; 26];
        datetime[..19].copy_from_slice(&self.cached);
        let mut datetime_len = 19;
        if micros != 0 {
            datetime[19] = b'.';
            let mut m = micros;
            for i in (20..26).rev() {
                datetime[i] = b'0' + (m % 10) as u8;
                m /= 10;
            }
            datetime_len = 26;
        }
        Timestamp {
            unix_secs: secs,
            micros,
            elapsed_micros: instant.duration_since(self.start).as_micros() as u64,
            datetime,
            datetime_len,
            instant,
        }
    }
}

/// A destination for log records. Implement it to add a backend (TensorBoard, a socket, ...).
///
/// `log` receives `rank` = the rank the [`Logger`] adds to the data (first, as `rank`) when
/// the data has no `rank` entry of its own; `None` means add nothing.
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
fn rank_as_int(key: &str, v: &Value) -> Option<i64> {
    match v {
        Value::Float(x) if key == "rank" && x.is_finite() && x.fract() == 0.0 => Some(*x as i64),
        _ => None,
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

/// Writes tcap_dllogger's JSON stream: `TCAPPDLL {json}` lines of type METADATA and LOG and
/// `INFO {json}` lines, with the same keys in the same order as tcap.
///
/// Unlike tcap, `data` is a real JSON object with numbers as numbers
/// (`{"rank": 0, "train.loss": 0.55}`); non-finite floats are written as the strings
/// `"nan"`, `"inf"`, `"-inf"` (JSON has no literal for them). The reader accepts both shapes.
///
/// Buffered (64 KiB): lines reach the file when the buffer fills, at the first log call more
/// than one second after the last flush, on [`Logger::flush`], and when the logger is dropped.
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

/// The process's rank, found the way tcap_dllogger finds it:
///
/// 1. neither `WORLD_SIZE` nor `PADDLE_TRAINERS_NUM` set → not a distributed launch: `None`
///    (tcap uses 0);
/// 2. `WORLD_SIZE` = 1 → `Some(0)`;
/// 3. `LOCAL_RANK` (torchrun) if set, else `PADDLE_TRAINER_ID` (Paddle), else `Some(0)`.
///
/// A rank variable that is not a non-negative integer gives `None` (tcap would crash) and a
/// `tracing` warning naming the variable.
pub fn rank_from_env() -> Option<u32> {
    rank_from_vars(|k| std::env::var(k).ok())
}

/// [`rank_from_env`] over any variable lookup, so the rule can be tested without touching the
/// process environment.
pub fn rank_from_vars(get: impl Fn(&str) -> Option<String>) -> Option<u32> {
    let world = get("WORLD_SIZE");
    if world.is_none() && get("PADDLE_TRAINERS_NUM").is_none() {
        return None;
    }
    if world.as_deref().map(str::trim) == Some("1") {
        return Some(0);
    }
    for var in ["LOCAL_RANK", "PADDLE_TRAINER_ID"] {
        if let Some(v) = get(var) {
            return match v.trim().parse::<u32>() {
                Ok(r) => Some(r),
                Err(_) => {
                    tracing::warn!(
                        "{var}={v:?} is not a non-negative integer; logging without a rank"
                    );
                    None
                }
            };
        }
    }
    Some(0)
}

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
