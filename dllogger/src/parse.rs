//! The pure line parser behind the reader: one physical line of bytes in, records out.
//!
//! Byte-level on purpose: a training log is mostly noise, may hold invalid UTF-8, and must be
//! read at hundreds of MB/s. JSON lines are read with a small lenient scanner rather than
//! `serde_json`, because Python's `json.dumps` (NVIDIA dllogger, tcap's INFO lines) writes the
//! bare tokens `NaN`, `Infinity`, `-Infinity`, which strict JSON parsers reject.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem;

use crate::record::{LogFormat, Metadata, Record};

mod console;
mod detection;
mod pyrepr;

pub(crate) use detection::State as DetectionState;

use pyrepr::PyScanner;

/// What one line turned into.
#[derive(Debug, Clone, PartialEq)]
pub enum LineParse {
    /// The line held at least one record (a glued line can hold several).
    Records(Vec<Record>),
    /// Noise (banners, warnings, other tools' output), or a log line with no numeric values
    /// (METADATA, INFO, `PARAMETER` steps).
    Skipped,
    /// The line looked like a log line of a known format but could not be parsed.
    Malformed,
}

/// Parses one line (without its `\n`; a trailing `\r` is ignored).
pub fn parse_line(line: &[u8]) -> LineParse {
    let mut out = Vec::new();
    let outcome = parse_line_into(line, &mut out, &mut |_| {}, &mut DetectionState::default());
    if !out.is_empty() {
        LineParse::Records(out.into_iter().map(|(_, r)| r).collect())
    } else if outcome.malformed {
        LineParse::Malformed
    } else {
        LineParse::Skipped
    }
}

/// Why a line that looked like a log line of a known format did not parse. The reader only
/// counts such lines ([`LineParse::Malformed`]); the kind says which rule the line broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParseError {
    #[error("the line ends inside a value")]
    EndOfLine,
    #[error("expected `{}`", char::from(*.0))]
    Expected(u8),
    #[error("a bad escape in a string")]
    BadEscape,
    #[error("values nested deeper than {MAX_DEPTH}")]
    TooDeep,
    #[error("neither a string, a number nor an object")]
    BadValue,
    #[error("a step that is not a non-negative integer")]
    BadStep,
    #[error("a key with no value (a cut line)")]
    MissingValue,
    #[error("no `<datetime> - ` before the fields")]
    NoDatetime,
}

/// What a line declares besides records: a metric's METADATA, or one entry of a `PARAMETER`
/// record (the run's configuration: model, batch size, lr ..., values as written).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Declared {
    Metadata(String, Metadata),
    Parameter(String, String),
}

/// The longest parameter value kept (a config dump logged as one value is cut here, so a
/// PARAMETER record cannot grow the reader's memory).
pub(crate) const MAX_PARAMETER_TEXT: usize = 256;

/// How a line was classified beyond the records it produced.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Outcome {
    /// Some part looked like a known log line but did not parse.
    pub malformed: bool,
    /// A known-format line with no metrics (METADATA, INFO, PARAMETER).
    pub meta: bool,
}

const MARKER: &[u8] = b"TCAPPDLL ";

/// Substring searchers built once: building one costs more than a short search.
static MARKER_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(MARKER));
static DASH_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b" - "));

/// Parses `line`, pushing records to `out` and METADATA / PARAMETER entries to `on_decl`;
/// `detection` carries what a detection log's earlier lines said (the epoch, the IoU type).
pub(crate) fn parse_line_into(
    line: &[u8],
    out: &mut Vec<(LogFormat, Record)>,
    on_decl: &mut dyn FnMut(Declared),
    detection: &mut DetectionState,
) -> Outcome {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut oc = Outcome::default();
    let finder = &*MARKER_FINDER;
    // A line that starts with a JSON object (`DLLL {`, `INFO {"`) is parsed as JSON first, so
    // a `TCAPPDLL ` quoted inside its strings does not start a segment.
    let lead = line
        .iter()
        .position(|&c| c != b' ' && c != b'\t')
        .unwrap_or(line.len());
    let rest = &line[lead..];
    let json_start = if let Some(json) = rest.strip_prefix(b"DLLL ") {
        let j = json.iter().position(|&c| c != b' ').unwrap_or(json.len());
        Some((lead + 5 + j, Flavor::Nvidia))
    } else if rest.starts_with(b"INFO {\"") {
        Some((lead + 5, Flavor::Tcap))
    } else {
        None
    };
    let mut from = 0;
    if let Some((start, flavor)) = json_start {
        match parse_json_line(&line[start..], flavor, out, on_decl) {
            Ok((consumed, meta)) => {
                oc.meta |= meta;
                from = start + consumed;
            }
            Err(_) => {
                oc.malformed = true;
                return oc;
            }
        }
    }
    if let Some(first) = finder.find(&line[from..]) {
        // Every `TCAPPDLL ` starts a segment: ranks writing at once glue lines together.
        let mut pos = from + first;
        while pos < line.len() {
            let body = &line[pos + MARKER.len()..];
            let body_start = pos + MARKER.len();
            let trimmed = body.iter().position(|&c| c != b' ').unwrap_or(body.len());
            if body.get(trimmed) == Some(&b'{') {
                let start = body_start + trimmed;
                match parse_json_line(&line[start..], Flavor::Tcap, out, on_decl) {
                    Ok((consumed, meta)) => {
                        oc.meta |= meta;
                        pos = match finder.find(&line[start + consumed..]) {
                            Some(n) => start + consumed + n,
                            None => line.len(),
                        };
                    }
                    Err(_) => {
                        oc.malformed = true;
                        pos = match finder.find(&line[start + 1..]) {
                            Some(n) => start + 1 + n,
                            None => line.len(),
                        };
                    }
                }
            } else {
                let end = finder.find(body).map_or(line.len(), |n| body_start + n);
                match parse_stdout_segment(&line[body_start..end], out, on_decl) {
                    Ok(meta) => oc.meta |= meta,
                    Err(_) => oc.malformed = true,
                }
                pos = end;
            }
        }
        return oc;
    }
    if json_start.is_some() {
        return oc;
    }
    match detection::parse(line, detection, out) {
        detection::Claim::No => console::parse(line, out),
        detection::Claim::Meta => oc.meta = true,
        detection::Claim::Records => {}
    }
    oc
}

// ---------------------------------------------------------------------------------------------
// Numbers

/// A metric value as text → f64: plain numbers, `nan`/`inf`/`NaN`/`Infinity` (any case, with
/// sign), and a wrapped first argument such as `tensor(2.16, device='sdaa:0')`.
pub(crate) fn parse_number(s: &[u8]) -> Option<f64> {
    let s = trim(s);
    if s.is_empty() || s.len() > 64 && !s.contains(&b'(') {
        return None;
    }
    if let Some(v) = std::str::from_utf8(s)
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
    {
        return Some(v);
    }
    // `tensor(2.16, ...)`, `np.float32(2.16)`: an identifier, '(' and a number.
    let open = s.iter().position(|&c| c == b'(')?;
    if open == 0 || !s[0].is_ascii_alphabetic() || s.last() != Some(&b')') {
        return None;
    }
    let inner = &s[open + 1..];
    let end = inner
        .iter()
        .position(|&c| c == b',' || c == b')')
        .unwrap_or(inner.len());
    let t = trim(&inner[..end]);
    if t.is_empty() || t.len() > 64 {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse::<f64>().ok()
}

/// A rank value as text → u32 (`"0"`, `1`, `1.0`).
fn parse_rank(s: &[u8]) -> Option<u32> {
    let s = trim(s);
    let t = std::str::from_utf8(s).ok()?;
    if let Ok(r) = t.parse::<u32>() {
        return Some(r);
    }
    let f = t.parse::<f64>().ok()?;
    (f >= 0.0 && f <= u32::MAX as f64 && f.fract() == 0.0).then_some(f as u32)
}

/// A step component → u64 (`3`, or an integral float such as `3.0`).
fn parse_step_num(s: &[u8]) -> Option<u64> {
    let t = std::str::from_utf8(trim(s)).ok()?;
    if let Ok(v) = t.parse::<u64>() {
        return Some(v);
    }
    let f = t.parse::<f64>().ok()?;
    ((0.0..1.8e19).contains(&f) && f.fract() == 0.0).then_some(f as u64)
}

fn trim(s: &[u8]) -> &[u8] {
    let a = s
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(s.len());
    let b = s
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(a, |p| p + 1);
    &s[a..b.max(a)]
}

/// Adds one `key → value text` pair to a record under construction.
fn add_pair(rec: &mut Record, has_rank: &mut bool, key: &[u8], value: Option<f64>, raw: &[u8]) {
    if key == b"rank" {
        if let Some(r) = parse_rank(raw) {
            rec.rank = r;
            *has_rank = true;
        }
        return;
    }
    if let Some(v) = value {
        rec.metrics
            .push((String::from_utf8_lossy(key).into_owned(), v));
    }
}

fn empty_record() -> Record {
    Record {
        epoch: None,
        iteration: None,
        val_iteration: None,
        rank: 0,
        step_name: None,
        metrics: Vec::new(),
    }
}

/// A parameter entry: the key and the value's text, cut to [`MAX_PARAMETER_TEXT`].
fn declare_parameter(on_decl: &mut dyn FnMut(Declared), key: &[u8], value: &[u8]) {
    if key == b"rank" || key.is_empty() {
        return;
    }
    let key = String::from_utf8_lossy(&key[..key.len().min(MAX_PARAMETER_TEXT)]).into_owned();
    let mut end = value.len().min(MAX_PARAMETER_TEXT);
    while end < value.len() && end > 0 && (value[end] & 0xC0) == 0x80 {
        end -= 1; // do not cut inside a UTF-8 character
    }
    on_decl(Declared::Parameter(
        key,
        String::from_utf8_lossy(trim(&value[..end])).into_owned(),
    ));
}

// ---------------------------------------------------------------------------------------------
// tcap stdout: `<datetime> - Epoch: E Iteration: I  rank : R  k : v unit  k : v`

/// Returns whether the segment was a `PARAMETER` line (declared, not a record).
fn parse_stdout_segment(
    seg: &[u8],
    out: &mut Vec<(LogFormat, Record)>,
    on_decl: &mut dyn FnMut(Declared),
) -> Result<bool, ParseError> {
    let dash = DASH_FINDER.find(seg).ok_or(ParseError::NoDatetime)?;
    // The datetime (`2025-05-15 14:20:10.934968`) starts with a digit and is short.
    if dash > 40 || !seg.first().is_some_and(u8::is_ascii_digit) {
        return Err(ParseError::NoDatetime);
    }
    let mut body = &seg[dash + 3..];
    let mut rec = empty_record();
    let labels: [(&[u8], usize); 3] = [
        (b"Epoch:", 0),
        (b"Iteration:", 1),
        (b"Validation Iteration:", 2),
    ];
    for (label, slot) in labels {
        let b = trim_start(body);
        if let Some(rest) = b.strip_prefix(label) {
            let rest = trim_start(rest);
            let n = rest.iter().position(|&c| c == b' ').unwrap_or(rest.len());
            let v = parse_step_num(&rest[..n]).ok_or(ParseError::BadStep)?;
            match slot {
                0 => rec.epoch = Some(v),
                1 => rec.iteration = Some(v),
                _ => rec.val_iteration = Some(v),
            }
            body = &rest[n..];
        }
    }
    // A text step (`PARAMETER`, `FINISHED`): the first token when no number label came and
    // it is not itself a key (`rank : 0` after an empty step).
    if rec.epoch.is_none() && rec.iteration.is_none() && rec.val_iteration.is_none() {
        let b = trim_start(body);
        let n = b.iter().position(|&c| c == b' ').unwrap_or(b.len());
        let after = trim_start(&b[n..]);
        if n > 0 && !b[..n].contains(&b':') && !after.starts_with(b":") {
            rec.step_name = Some(String::from_utf8_lossy(&b[..n]).into_owned());
            body = &b[n..];
        }
    }
    let parameters = rec.step_name.as_deref() == Some("PARAMETER");
    // `key : value` pairs; tokens without a colon (units) are passed over.
    let mut has_rank = false;
    let mut i = 0;
    while let Some(off) = memchr::memchr(b':', &body[i..]) {
        let colon = i + off;
        let mut ke = colon;
        while ke > i && body[ke - 1] == b' ' {
            ke -= 1;
        }
        let mut ks = ke;
        while ks > i && body[ks - 1] != b' ' {
            ks -= 1;
        }
        let mut vs = colon + 1;
        while vs < body.len() && body[vs] == b' ' {
            vs += 1;
        }
        let ve = body[vs..]
            .iter()
            .position(|&c| c == b' ')
            .map_or(body.len(), |p| vs + p);
        let key = &body[ks..ke];
        if !key.is_empty() {
            if vs == ve {
                return Err(ParseError::MissingValue);
            }
            let raw = &body[vs..ve];
            if parameters {
                declare_parameter(on_decl, key, raw);
            } else {
                add_pair(&mut rec, &mut has_rank, key, parse_number(raw), raw);
            }
        }
        i = ve.max(colon + 1);
    }
    if parameters {
        return Ok(true);
    }
    if !rec.metrics.is_empty() {
        out.push((LogFormat::TcapStdout, rec));
    }
    Ok(false)
}

fn trim_start(s: &[u8]) -> &[u8] {
    let a = s.iter().position(|&c| c != b' ').unwrap_or(s.len());
    &s[a..]
}

// ---------------------------------------------------------------------------------------------
// JSON lines (ours, tcap's, NVIDIA's)

#[derive(Clone, Copy, PartialEq)]
enum Flavor {
    Tcap,
    Nvidia,
}

/// Parses a `{...}` log object; returns the bytes consumed and whether it was a metadata-only
/// line. Records go to `out`.
fn parse_json_line(
    s: &[u8],
    flavor: Flavor,
    out: &mut Vec<(LogFormat, Record)>,
    on_decl: &mut dyn FnMut(Declared),
) -> Result<(usize, bool), ParseError> {
    let mut sc = Scanner { b: s, i: 0 };
    let mut ty: Option<Cow<[u8]>> = None;
    let mut step: Option<(usize, usize)> = None;
    let mut data: Option<(usize, usize)> = None;
    let mut metric: Option<Cow<[u8]>> = None;
    let mut metadata: Option<(usize, usize)> = None;
    sc.expect(b'{')?;
    sc.ws();
    if sc.peek() == Some(b'}') {
        sc.i += 1;
    } else {
        loop {
            sc.ws();
            let key = sc.string()?;
            sc.ws();
            sc.expect(b':')?;
            sc.ws();
            let start = sc.i;
            match &*key {
                b"type" if sc.peek() == Some(b'"') => ty = Some(sc.string()?),
                b"metric" if sc.peek() == Some(b'"') => metric = Some(sc.string()?),
                _ => sc.skip_value()?,
            }
            match &*key {
                b"step" => step = Some((start, sc.i)),
                b"data" => data = Some((start, sc.i)),
                b"metadata" => metadata = Some((start, sc.i)),
                _ => {}
            }
            sc.ws();
            match sc.next() {
                Some(b',') => continue,
                Some(b'}') => break,
                _ => return Err(ParseError::Expected(b'}')),
            }
        }
    }
    let consumed = sc.i;
    let ty = ty.as_deref().unwrap_or(b"LOG");
    match ty {
        b"METADATA" => {
            if let (Some(m), Some((a, b))) = (metric, metadata) {
                on_decl(Declared::Metadata(
                    String::from_utf8_lossy(&m).into_owned(),
                    parse_metadata(&s[a..b])?,
                ));
            }
            return Ok((consumed, true));
        }
        b"LOG" => {}
        b"PARAMETER" => {
            if let Some((a, b)) = data {
                parse_parameters(&s[a..b], on_decl)?;
            }
            return Ok((consumed, true));
        }
        _ => return Ok((consumed, true)), // INFO, ...
    }
    let Some((da, db)) = data else {
        return Ok((consumed, true));
    };
    let mut rec = empty_record();
    if let Some((a, b)) = step {
        let mut st = Scanner { b: &s[a..b], i: 0 };
        match st.peek() {
            Some(b'[') => {
                st.i += 1;
                let mut k = 0;
                loop {
                    st.ws();
                    if st.peek() == Some(b']') {
                        break;
                    }
                    let ts = st.i;
                    st.skip_value()?;
                    let v = parse_step_num(&st.b[ts..st.i]).ok_or(ParseError::BadStep)?;
                    match k {
                        0 => rec.epoch = Some(v),
                        1 => rec.iteration = Some(v),
                        2 => rec.val_iteration = Some(v),
                        _ => {}
                    }
                    k += 1;
                    st.ws();
                    match st.next() {
                        Some(b',') => continue,
                        Some(b']') => break,
                        _ => return Err(ParseError::Expected(b']')),
                    }
                }
            }
            Some(b'"') => {
                let text = st.string()?;
                if &*text == b"PARAMETER" {
                    parse_parameters(&s[da..db], on_decl)?;
                    return Ok((consumed, true));
                }
                rec.step_name = Some(String::from_utf8_lossy(&text).into_owned());
            }
            _ => {}
        }
    }
    let dv = &s[da..db];
    let format = match dv.first() {
        Some(b'{') => {
            parse_json_data(dv, &mut rec)?;
            if flavor == Flavor::Nvidia {
                LogFormat::NvidiaDlll
            } else {
                LogFormat::OurJson
            }
        }
        Some(b'"') => {
            let text = Scanner { b: dv, i: 0 }.string()?;
            parse_py_dict(&text, &mut rec)?;
            if flavor == Flavor::Nvidia {
                LogFormat::NvidiaDlll
            } else {
                LogFormat::TcapJson
            }
        }
        _ => return Err(ParseError::BadValue),
    };
    if rec.metrics.is_empty() {
        return Ok((consumed, true));
    }
    out.push((format, rec));
    Ok((consumed, false))
}

/// A `PARAMETER` record's `data`: a JSON object (ours, NVIDIA's) or tcap's Python-repr string;
/// every entry is declared with its value as text (strings unquoted).
fn parse_parameters(dv: &[u8], on_decl: &mut dyn FnMut(Declared)) -> Result<(), ParseError> {
    match dv.first() {
        Some(b'{') => {
            let mut sc = Scanner { b: dv, i: 0 };
            sc.object_pairs(|sc, key| {
                if sc.peek() == Some(b'"') {
                    let v = sc.string()?;
                    declare_parameter(on_decl, key, &v);
                } else {
                    let a = sc.i;
                    sc.skip_value()?;
                    declare_parameter(on_decl, key, &sc.b[a..sc.i]);
                }
                Ok(())
            })
        }
        Some(b'"') => {
            let text = Scanner { b: dv, i: 0 }.string()?;
            let mut p = PyScanner { b: &text, i: 0 };
            p.ws();
            if p.next() != Some(b'{') {
                return Err(ParseError::Expected(b'{'));
            }
            p.ws();
            if p.peek() == Some(b'}') {
                return Ok(());
            }
            loop {
                p.ws();
                let key = p.string()?;
                p.ws();
                if p.next() != Some(b':') {
                    return Err(ParseError::Expected(b':'));
                }
                p.ws();
                if matches!(p.peek(), Some(b'\'') | Some(b'"')) {
                    let v = p.string()?;
                    declare_parameter(on_decl, &key, &v);
                } else {
                    let a = p.i;
                    p.bare()?;
                    declare_parameter(on_decl, &key, &p.b[a..p.i]);
                }
                p.ws();
                match p.next() {
                    Some(b',') => continue,
                    Some(b'}') => return Ok(()),
                    _ => return Err(ParseError::Expected(b'}')),
                }
            }
        }
        _ => Err(ParseError::BadValue),
    }
}

/// `{"unit": "imgs/s", "format": ":.3f", "GOAL": "MAXIMIZE", "STAGE": "TRAIN"}`.
fn parse_metadata(s: &[u8]) -> Result<Metadata, ParseError> {
    let mut md = Metadata::default();
    let mut sc = Scanner { b: s, i: 0 };
    sc.object_pairs(|sc, key| {
        if sc.peek() == Some(b'"') {
            let v = String::from_utf8_lossy(&sc.string()?).into_owned();
            match key {
                b"unit" => md.unit = Some(v),
                b"format" => md.format = Some(v),
                b"GOAL" => md.goal = Some(v),
                b"STAGE" => md.stage = Some(v),
                _ => {}
            }
            Ok(())
        } else {
            sc.skip_value()
        }
    })?;
    Ok(md)
}

/// Our / NVIDIA `data` object: numbers, strings of numbers, `NaN`/`Infinity` tokens.
fn parse_json_data(s: &[u8], rec: &mut Record) -> Result<(), ParseError> {
    let mut sc = Scanner { b: s, i: 0 };
    let mut has_rank = false;
    sc.object_pairs(|sc, key| {
        match sc.peek() {
            Some(b'"') => {
                let v = sc.string()?;
                add_pair(rec, &mut has_rank, key, parse_number(&v), &v);
            }
            Some(b'{') | Some(b'[') => sc.skip_value()?,
            _ => {
                let a = sc.i;
                sc.skip_value()?;
                let raw = &sc.b[a..sc.i];
                add_pair(rec, &mut has_rank, key, parse_number(raw), raw);
            }
        }
        Ok(())
    })
}

/// tcap's `data`: Python `str(dict)` such as `{'rank': '0', 'train.loss': '2.16'}`.
fn parse_py_dict(s: &[u8], rec: &mut Record) -> Result<(), ParseError> {
    let mut p = PyScanner { b: s, i: 0 };
    let mut has_rank = false;
    p.ws();
    if p.next() != Some(b'{') {
        return Err(ParseError::Expected(b'{'));
    }
    p.ws();
    if p.peek() == Some(b'}') {
        return Ok(());
    }
    loop {
        p.ws();
        let key = p.string()?;
        p.ws();
        if p.next() != Some(b':') {
            return Err(ParseError::Expected(b':'));
        }
        p.ws();
        if matches!(p.peek(), Some(b'\'') | Some(b'"')) {
            let v = p.string()?;
            add_pair(rec, &mut has_rank, &key, parse_number(&v), &v);
        } else {
            let a = p.i;
            p.bare()?;
            let raw = &p.b[a..p.i];
            add_pair(rec, &mut has_rank, &key, parse_number(raw), raw);
        }
        p.ws();
        match p.next() {
            Some(b',') => continue,
            Some(b'}') => return Ok(()),
            _ => return Err(ParseError::Expected(b'}')),
        }
    }
}

/// A lenient JSON cursor over bytes.
struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

/// Nesting deeper than this is not a log line; refusing it bounds the work per byte.
const MAX_DEPTH: usize = 64;

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn next(&mut self) -> Option<u8> {
        let c = self.peek();
        self.i += c.is_some() as usize;
        c
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }
    fn expect(&mut self, c: u8) -> Result<(), ParseError> {
        (self.next() == Some(c))
            .then_some(())
            .ok_or(ParseError::Expected(c))
    }

    /// A JSON string, unescaped (borrowed when it has no escapes).
    fn string(&mut self) -> Result<Cow<'a, [u8]>, ParseError> {
        self.expect(b'"')?;
        let start = self.i;
        let rest = &self.b[start..];
        let end = memchr::memchr2(b'"', b'\\', rest).ok_or(ParseError::EndOfLine)?;
        if rest[end] == b'"' {
            self.i = start + end + 1;
            return Ok(Cow::Borrowed(&rest[..end]));
        }
        let mut out = rest[..end].to_vec();
        self.i = start + end;
        loop {
            match self.next().ok_or(ParseError::EndOfLine)? {
                b'"' => return Ok(Cow::Owned(out)),
                b'\\' => match self.next().ok_or(ParseError::EndOfLine)? {
                    b'"' => out.push(b'"'),
                    b'\\' => out.push(b'\\'),
                    b'/' => out.push(b'/'),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'u' => {
                        let mut cp = self.hex4()?;
                        if (0xD800..0xDC00).contains(&cp)
                            && self.b.get(self.i..self.i + 2) == Some(b"\\u")
                        {
                            self.i += 2;
                            let lo = self.hex4()?;
                            if (0xDC00..0xE000).contains(&lo) {
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                            }
                        }
                        let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                        let mut tmp = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
                    }
                    _ => return Err(ParseError::BadEscape),
                },
                c => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let h = self
            .b
            .get(self.i..self.i + 4)
            .ok_or(ParseError::EndOfLine)?;
        let s = std::str::from_utf8(h).map_err(|_| ParseError::BadEscape)?;
        let v = u32::from_str_radix(s, 16).map_err(|_| ParseError::BadEscape)?;
        self.i += 4;
        Ok(v)
    }

    /// Skips one value of any kind; nested values are skipped with a depth counter, never
    /// recursion, so hostile nesting cannot overflow the stack.
    fn skip_value(&mut self) -> Result<(), ParseError> {
        match self.peek().ok_or(ParseError::EndOfLine)? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek().ok_or(ParseError::EndOfLine)? {
                        b'"' => {
                            self.string()?;
                        }
                        b'{' | b'[' => {
                            depth += 1;
                            if depth > MAX_DEPTH {
                                return Err(ParseError::TooDeep);
                            }
                            self.i += 1;
                        }
                        b'}' | b']' => {
                            depth -= 1;
                            self.i += 1;
                            if depth == 0 {
                                return Ok(());
                            }
                        }
                        _ => self.i += 1,
                    }
                }
            }
            _ => {
                // number, true/false/null, NaN, Infinity, -Infinity
                let start = self.i;
                while let Some(c) = self.peek() {
                    if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.') {
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                (self.i > start).then_some(()).ok_or(ParseError::BadValue)
            }
        }
    }

    /// Calls `f(scanner, key)` at each value of an object; `f` must consume the value.
    fn object_pairs(
        &mut self,
        mut f: impl FnMut(&mut Self, &[u8]) -> Result<(), ParseError>,
    ) -> Result<(), ParseError> {
        self.ws();
        self.expect(b'{')?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            let key = self.string()?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            f(self, &key)?;
            self.ws();
            match self.next() {
                Some(b',') => continue,
                Some(b'}') => return Ok(()),
                _ => return Err(ParseError::Expected(b'}')),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_name_the_broken_rule() {
        let mut out = Vec::new();
        let seg = b"2025-05-15 14:20:10 - Epoch: 0 Iteration: 3  train.loss :";
        assert_eq!(
            parse_stdout_segment(seg, &mut out, &mut |_| {}),
            Err(ParseError::MissingValue)
        );
        assert_eq!(
            parse_stdout_segment(b"no datetime here", &mut out, &mut |_| {}),
            Err(ParseError::NoDatetime)
        );
        let mut rec = empty_record();
        assert_eq!(
            parse_py_dict(b"{'a' 1}", &mut rec),
            Err(ParseError::Expected(b':'))
        );
        assert_eq!(
            parse_json_data(b"{\"a\": \"1", &mut rec),
            Err(ParseError::EndOfLine)
        );
        assert_eq!(ParseError::Expected(b'}').to_string(), "expected `}`");
    }
}
