//! Streaming reader: any training log in, [`Record`](crate::Record)s out, in one pass and bounded memory.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::csv;
use crate::parse::{parse_line_into, Declared, DetectionState};
use crate::record::{LogFormat, Metadata, Record};

/// Records produced per format.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormatCounts {
    pub our_json: u64,
    pub tcap_json: u64,
    pub tcap_stdout: u64,
    pub nvidia_dlll: u64,
    pub plain_loss: u64,
    pub epoch_summary: u64,
    pub detection: u64,
    pub csv: u64,
}

impl FormatCounts {
    pub fn get(&self, f: LogFormat) -> u64 {
        match f {
            LogFormat::OurJson => self.our_json,
            LogFormat::TcapJson => self.tcap_json,
            LogFormat::TcapStdout => self.tcap_stdout,
            LogFormat::NvidiaDlll => self.nvidia_dlll,
            LogFormat::PlainLoss => self.plain_loss,
            LogFormat::EpochSummary => self.epoch_summary,
            LogFormat::Detection => self.detection,
            LogFormat::Csv => self.csv,
        }
    }
    fn bump(&mut self, f: LogFormat) {
        *match f {
            LogFormat::OurJson => &mut self.our_json,
            LogFormat::TcapJson => &mut self.tcap_json,
            LogFormat::TcapStdout => &mut self.tcap_stdout,
            LogFormat::NvidiaDlll => &mut self.nvidia_dlll,
            LogFormat::PlainLoss => &mut self.plain_loss,
            LogFormat::EpochSummary => &mut self.epoch_summary,
            LogFormat::Detection => &mut self.detection,
            LogFormat::Csv => &mut self.csv,
        } += 1;
    }
}

/// What a read saw. Every line counts in exactly one of `record_lines`, `metadata`,
/// `skipped`, `malformed` (a glued line with one good and one cut part is `malformed` but
/// still yields its good record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines read (a last line without `\n` counts).
    pub lines: u64,
    /// Records produced.
    pub records: u64,
    /// Lines that were not log lines: banners, warnings, other tools' output, blank lines.
    pub skipped: u64,
    /// Lines that looked like a log line of a known format but could not be parsed, and
    /// lines longer than the line limit whose text after their last `\r` is still too long.
    pub malformed: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Lines that produced at least one record.
    pub record_lines: u64,
    /// Known-format lines without metric values: METADATA, INFO, `PARAMETER` steps, CSV
    /// headers, detection lines with nothing to compare (an evaluation's step lines, an
    /// `IoU metric: bbox` header).
    pub metadata: u64,
    /// Records per format.
    pub formats: FormatCounts,
    /// Lines longer than the line limit. tqdm redraws its progress bar with `\r` on one
    /// physical line, so a record can follow megabytes of progress: such a line is read from
    /// the text after its last `\r` (and counted by what that text is), or, when that text is
    /// itself over the limit, counted `malformed` and in `overlong_unread`.
    pub overlong: u64,
    /// Lines of `overlong` of which nothing could be read.
    pub overlong_unread: u64,
}

/// Errors opening or reading a log; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot open log {path}: {source} (check the path and its permissions)")]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("error reading log {path} after {bytes} bytes: {source}")]
    Read {
        path: PathBuf,
        bytes: u64,
        #[source]
        source: io::Error,
    },
}

/// A placeholder left where a record was moved out (allocates nothing).
const EMPTY: Record = Record {
    epoch: None,
    iteration: None,
    val_iteration: None,
    rank: 0,
    step_name: None,
    metrics: Vec::new(),
};

/// Lines longer than this are not held whole: only their text after the last `\r` is read
/// (see [`ReadStats::overlong`]).
pub const DEFAULT_MAX_LINE: usize = 1 << 20;

/// METADATA entries kept at most (a log declares a handful; the cap bounds memory).
const MAX_METADATA: usize = 4096;

/// `PARAMETER` entries kept at most (values are cut at 256 bytes), for the same reason.
pub const MAX_PARAMETERS: usize = 256;

/// Reads records from any `BufRead`, one line at a time.
///
/// Memory stays bounded whatever the input: one line buffer of at most the line limit
/// ([`DEFAULT_MAX_LINE`]; of a longer line, only the text since its latest `\r` is held, up
/// to the limit), the records of one line, the METADATA and PARAMETER tables (capped) and the
/// last CSV header (at most 256 short column names). An I/O error ends
/// the iteration; check [`LogReader::error`] afterwards (or use [`LogReader::try_next`]).
pub struct LogReader<R: BufRead> {
    inner: R,
    path: PathBuf,
    line: LineBuf,
    pending: Vec<(LogFormat, Record)>,
    /// Index of the next record of `pending` to hand out.
    next_pending: usize,
    stats: ReadStats,
    tables: Tables,
    error: Option<io::Error>,
    done: bool,
}

/// What the reader keeps across lines besides counts: METADATA, PARAMETER entries, and the
/// CSV header rows are read under.
#[derive(Default)]
struct Tables {
    metadata: BTreeMap<String, Metadata>,
    parameters: BTreeMap<String, String>,
    csv: Option<csv::Header>,
    /// What a detection log's lines say about the next ones (the epoch, the IoU type).
    detection: DetectionState,
}

/// Opens a log file for reading. Only a regular file is opened (non-blocking, checked on the
/// opened descriptor): a FIFO would block the read until a writer came, a device would never
/// end. Its size is not bounded — the reader streams it in bounded memory.
pub fn open(path: &Path) -> Result<LogReader<BufReader<File>>, ReadError> {
    let f = modelzoo_support::input::open_regular(path, "log").map_err(|e| ReadError::Open {
        path: path.to_owned(),
        source: e.into_io_reason(),
    })?;
    let mut r = LogReader::new(BufReader::with_capacity(256 * 1024, f));
    r.path = path.to_owned();
    Ok(r)
}

impl<R: BufRead> LogReader<R> {
    pub fn new(inner: R) -> Self {
        LogReader {
            inner,
            path: PathBuf::from("<stream>"),
            line: LineBuf::new(DEFAULT_MAX_LINE),
            pending: Vec::new(),
            next_pending: 0,
            stats: ReadStats::default(),
            tables: Tables::default(),
            error: None,
            done: false,
        }
    }

    /// Sets the line limit (bytes); of a longer line only the text after its last `\r` is
    /// read, and the line is malformed when that is still longer.
    pub fn with_max_line(mut self, max: usize) -> Self {
        self.line = LineBuf::new(max.max(1));
        self
    }

    /// Counts so far (final once the iterator returned `None`).
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    /// Units and goals declared by METADATA lines seen so far.
    pub fn metadata(&self) -> &BTreeMap<String, Metadata> {
        &self.tables.metadata
    }

    /// What the run said about itself in `PARAMETER` records seen so far (`batch_size`,
    /// `world_size`, `model_name`, `lr`, ...): each key's first value, as text as written
    /// (strings unquoted). At most [`MAX_PARAMETERS`] keys; values cut at 256 bytes.
    pub fn parameters(&self) -> &BTreeMap<String, String> {
        &self.tables.parameters
    }

    /// The I/O error that ended the iteration, if one did.
    pub fn error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// The next record, or the I/O error that stopped the read.
    pub fn try_next(&mut self) -> Result<Option<Record>, ReadError> {
        let r = self.next_tagged().map(|(_, r)| r);
        match self.error.take() {
            Some(source) => Err(ReadError::Read {
                path: self.path.clone(),
                bytes: self.stats.bytes,
                source,
            }),
            None => Ok(r),
        }
    }

    /// The next record with the format that produced it.
    pub fn next_tagged(&mut self) -> Option<(LogFormat, Record)> {
        loop {
            if self.next_pending < self.pending.len() {
                let i = self.next_pending;
                self.next_pending += 1;
                // Records are moved out; the emptied slot is cleared with the batch below.
                return Some(std::mem::replace(
                    &mut self.pending[i],
                    (LogFormat::PlainLoss, EMPTY),
                ));
            }
            self.pending.clear();
            self.next_pending = 0;
            if self.done {
                return None;
            }
            self.read_line();
        }
    }

    /// Reads one physical line and parses it into `pending`.
    fn read_line(&mut self) {
        let Self {
            inner,
            line,
            pending,
            stats,
            tables,
            error,
            done,
            ..
        } = self;
        loop {
            let buf = match inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    *error = Some(e);
                    *done = true;
                    return;
                }
            };
            if buf.is_empty() {
                *done = true;
                if line.started() {
                    finish_line(line, pending, stats, tables);
                }
                return;
            }
            match memchr::memchr(b'\n', buf) {
                Some(pos) if !line.started() && pos <= line.max => {
                    // Fast path: the whole line is in the reader's buffer.
                    process(&buf[..pos], pending, stats, tables);
                    stats.bytes += pos as u64 + 1;
                    inner.consume(pos + 1);
                    return;
                }
                Some(pos) => {
                    line.push(&buf[..pos]);
                    stats.bytes += pos as u64 + 1;
                    inner.consume(pos + 1);
                    finish_line(line, pending, stats, tables);
                    return;
                }
                None => {
                    let n = buf.len();
                    line.push(buf);
                    stats.bytes += n as u64;
                    inner.consume(n);
                }
            }
        }
    }
}

/// One physical line being assembled from buffer fills, in at most `max` bytes.
///
/// While the line fits, it is kept whole. Once it would exceed `max` it is `long`: from then
/// on only the current `\r`-separated segment is kept (tqdm redraws a progress bar with `\r`,
/// and the last segment holds what was printed after it), unless that segment itself exceeds
/// `max` (`seg_overlong`: its bytes are dropped until the next `\r`). A `\r` that ends the
/// bytes seen so far may be a CRLF's: the segment before it is kept until a byte other than
/// `\n` follows (`cr_pending`).
struct LineBuf {
    bytes: Vec<u8>,
    max: usize,
    long: bool,
    seg_overlong: bool,
    cr_pending: bool,
}

/// What the finished line leaves to parse.
enum LineEnd<'a> {
    /// The line, whole.
    Whole(&'a [u8]),
    /// A line over the limit: its text after the last `\r`.
    Tail(&'a [u8]),
    /// A line over the limit whose last segment is over the limit too.
    Unread,
}

impl LineBuf {
    fn new(max: usize) -> Self {
        LineBuf {
            bytes: Vec::new(),
            max,
            long: false,
            seg_overlong: false,
            cr_pending: false,
        }
    }

    /// Whether part of a line has been read.
    fn started(&self) -> bool {
        !self.bytes.is_empty() || self.long
    }

    /// Appends `part` (no `\n` in it).
    fn push(&mut self, part: &[u8]) {
        if !self.long {
            if self.bytes.len() + part.len() <= self.max {
                self.bytes.extend_from_slice(part);
                return;
            }
            // Over the limit: from now on keep only the current segment, starting with the
            // segment the kept bytes end in.
            self.long = true;
            let ends_cr = self.bytes.last() == Some(&b'\r');
            while self.bytes.last() == Some(&b'\r') {
                self.bytes.pop();
            }
            if let Some(r) = memchr::memrchr(b'\r', &self.bytes) {
                self.bytes.drain(..=r);
            }
            self.cr_pending = ends_cr;
        }
        self.push_segmented(part);
    }

    fn push_segmented(&mut self, part: &[u8]) {
        let body_len = part.iter().rposition(|&c| c != b'\r').map_or(0, |i| i + 1);
        if body_len == 0 {
            // Only `\r`s: whether they end the line (CRLF) or start a segment, the next byte says.
            self.cr_pending |= !part.is_empty();
            return;
        }
        if self.cr_pending {
            // The `\r` was not a CRLF's: a new segment starts after it.
            self.new_segment();
        }
        let body = &part[..body_len];
        match memchr::memrchr(b'\r', body) {
            Some(r) => {
                self.new_segment();
                self.append(&body[r + 1..]);
            }
            None => self.append(body),
        }
        self.cr_pending = body_len < part.len();
    }

    fn new_segment(&mut self) {
        self.bytes.clear();
        self.seg_overlong = false;
        self.cr_pending = false;
    }

    fn append(&mut self, b: &[u8]) {
        if self.seg_overlong {
            return;
        }
        if self.bytes.len() + b.len() > self.max {
            self.seg_overlong = true;
            self.bytes.clear();
            self.bytes.shrink_to(64 * 1024);
        } else {
            self.bytes.extend_from_slice(b);
        }
    }

    fn end(&self) -> LineEnd<'_> {
        if !self.long {
            LineEnd::Whole(&self.bytes)
        } else if self.seg_overlong {
            LineEnd::Unread
        } else {
            LineEnd::Tail(&self.bytes)
        }
    }

    fn reset(&mut self) {
        self.bytes.clear();
        if self.long {
            self.bytes.shrink_to(64 * 1024);
        }
        self.long = false;
        self.seg_overlong = false;
        self.cr_pending = false;
    }
}

fn finish_line(
    line: &mut LineBuf,
    pending: &mut Vec<(LogFormat, Record)>,
    stats: &mut ReadStats,
    tables: &mut Tables,
) {
    match line.end() {
        LineEnd::Whole(l) => process(l, pending, stats, tables),
        LineEnd::Tail(t) => {
            stats.overlong += 1;
            process(t, pending, stats, tables);
        }
        LineEnd::Unread => {
            stats.overlong += 1;
            stats.overlong_unread += 1;
            stats.lines += 1;
            stats.malformed += 1;
        }
    }
    line.reset();
}

fn process(
    line: &[u8],
    pending: &mut Vec<(LogFormat, Record)>,
    stats: &mut ReadStats,
    tables: &mut Tables,
) {
    stats.lines += 1;
    // CSV first: a header replaces the one rows are read under; a row needs one.
    if let Some(h) = csv::header(line) {
        tables.csv = Some(h);
        stats.metadata += 1;
        return;
    }
    if let Some(h) = &tables.csv {
        match h.row(line) {
            csv::Row::Record(rec) => {
                pending.push((LogFormat::Csv, rec));
                stats.record_lines += 1;
                stats.records += 1;
                stats.formats.bump(LogFormat::Csv);
                return;
            }
            csv::Row::Malformed => {
                stats.malformed += 1;
                return;
            }
            csv::Row::Other => {}
        }
    }
    let before = pending.len();
    let Tables {
        metadata,
        parameters,
        detection,
        ..
    } = tables;
    let oc = parse_line_into(
        line,
        pending,
        &mut |d| match d {
            Declared::Metadata(k, md) => {
                if metadata.len() < MAX_METADATA || metadata.contains_key(&k) {
                    metadata.insert(k, md);
                }
            }
            Declared::Parameter(k, v) => {
                if parameters.len() < MAX_PARAMETERS && !parameters.contains_key(&k) {
                    parameters.insert(k, v);
                }
            }
        },
        detection,
    );
    if oc.malformed {
        stats.malformed += 1;
    } else if pending.len() > before {
        stats.record_lines += 1;
    } else if oc.meta {
        stats.metadata += 1;
    } else {
        stats.skipped += 1;
    }
    stats.records += (pending.len() - before) as u64;
    for (f, _) in &pending[before..] {
        stats.formats.bump(*f);
    }
}

impl<R: BufRead> Iterator for LogReader<R> {
    type Item = Record;
    fn next(&mut self) -> Option<Record> {
        self.next_tagged().map(|(_, r)| r)
    }
}
