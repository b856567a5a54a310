//! What the Tecorigin ModelZoo's `run_scripts/loss.py` would read from a log, so that
//! `compare --rule modelzoo-loss` can say when its own verdict and loss.py's would differ.
//!
//! loss.py reads the whole file as text and takes `re.findall(r"rank : 0  train.loss :
//! ([\d\.e-]+)", text)`, or — only when that finds nothing — `re.findall(r"loss ([\d\.e-]+)",
//! text)`; it cuts both logs' lists to the shorter and converts each kept string with
//! `float()`. That regex cannot read `nan` or `inf` (the step is silently dropped), nor any
//! other spelling of the line (`rank: 0 train.loss : 1.5` gives nothing at all), and a
//! capture such as `-` (from `-inf`) stops loss.py with a `ValueError`.
//!
//! Here the same two patterns run over the file in a sliding window (no match can span a
//! `\n`, and the window keeps [`WINDOW_KEEP`] bytes of context), so memory is bounded by the
//! window plus 8 bytes per value found. Differences from Python that are left alone: loss.py
//! opens the file in the locale's encoding and would stop on bytes that do not decode (we
//! read bytes), and `float()` accepts non-ASCII digits that `\d` matches (Rust's parser does
//! not: such a capture counts as one float() rejects).

use std::io::{self, Read};
use std::path::Path;
use std::sync::LazyLock;

use regex::bytes::Regex;
use serde::Serialize;

/// loss.py's main pattern, verbatim (the `.` in `train.loss` is unescaped there too).
pub const PRIMARY: &str = r"rank : 0  train.loss : ([\d\.e-]+)";
/// loss.py's fallback, used only when [`PRIMARY`] finds nothing in the whole file.
pub const FALLBACK: &str = r"loss ([\d\.e-]+)";

static PRIMARY_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(PRIMARY).expect("valid"));
static FALLBACK_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(FALLBACK).expect("valid"));

/// Context kept between windows: a match starting this far from the window's end is complete
/// unless its number runs on past the window.
pub const WINDOW_KEEP: usize = 4096;

/// Captures longer than this (a run of digits no log prints as a loss) are not converted:
/// they are flagged `too_long` and loss.py's verdict is not reproduced. Being well under
/// [`WINDOW_KEEP`], the flag does not depend on where windows start.
pub const MAX_CAPTURE: usize = 1024;

/// Bytes read per window step.
const STEP: usize = 256 * 1024;

/// Which of loss.py's patterns supplied the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Primary,
    Fallback,
    /// Neither pattern matched: loss.py reads no value.
    None,
}

/// A capture loss.py's `float()` rejects, or one too long to convert here.
#[derive(Debug, Clone, Serialize)]
pub struct Unparsable {
    /// Position in the list of captures (0-based).
    pub index: usize,
    /// The captured text (at most 64 bytes of it).
    pub text: String,
    /// Longer than [`MAX_CAPTURE`]: not converted (Python might), rather than rejected.
    pub too_long: bool,
}

/// What loss.py would extract from one log.
#[derive(Debug, Clone, Serialize)]
pub struct Extraction {
    pub pattern: Pattern,
    /// The values, in file order; a capture `float()` rejects is NaN here (the patterns cannot
    /// capture a real NaN).
    #[serde(skip)]
    pub values: Vec<f64>,
    /// The first capture `float()` rejects, if any.
    pub first_unparsable: Option<Unparsable>,
}

impl Extraction {
    /// Number of values loss.py's lists hold for this log.
    pub fn len(&self) -> usize {
        self.values.len()
    }
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// One pattern's progress through the stream.
struct Scan {
    re: &'static Regex,
    /// Absolute offset where the next search starts.
    next: u64,
    /// Inside a capture that ran past the window: skip its remaining characters.
    in_long_capture: bool,
    values: Vec<f64>,
    first_unparsable: Option<Unparsable>,
}

impl Scan {
    fn new(re: &'static Regex) -> Self {
        Scan {
            re,
            next: 0,
            in_long_capture: false,
            values: Vec::new(),
            first_unparsable: None,
        }
    }

    /// Record a capture; `complete` is false when it may run on past the window.
    fn push(&mut self, text: &[u8], complete: bool) {
        let too_long = !complete || text.len() > MAX_CAPTURE;
        let parsed = if too_long { None } else { py_float(text) };
        let v = match parsed {
            Some(v) => v,
            None => {
                if self.first_unparsable.is_none() {
                    self.first_unparsable = Some(Unparsable {
                        index: self.values.len(),
                        text: String::from_utf8_lossy(&text[..text.len().min(64)]).into_owned(),
                        too_long,
                    });
                }
                f64::NAN
            }
        };
        self.values.push(v);
    }

    /// Scan `win` (starting at absolute offset `base`) for matches that start before `limit`
    /// (absolute), or all of it at end of input.
    fn scan(&mut self, win: &[u8], base: u64, limit: u64, eof: bool) {
        let mut at = (self.next.max(base) - base) as usize;
        if self.in_long_capture {
            let run = win[at..]
                .iter()
                .position(|&c| !is_capture_byte(c))
                .unwrap_or(win.len() - at);
            at += run;
            if at == win.len() && !eof {
                self.next = base + at as u64;
                return;
            }
            self.in_long_capture = false;
        }
        let lim = (limit - base) as usize;
        while let Some(m) = self.re.find_at(win, at) {
            if m.start() >= lim {
                break;
            }
            // Both patterns end in a space and then the group, which holds no space: the
            // capture is what follows the match's last space (no slower capture search).
            let whole = m.as_bytes();
            let cap = &whole[whole.iter().rposition(|&c| c == b' ').map_or(0, |i| i + 1)..];
            if m.end() == win.len() && !eof {
                // The number may run on past the window: more than MAX_CAPTURE characters.
                self.push(cap, false);
                self.in_long_capture = true;
                at = m.end();
                break;
            }
            self.push(cap, true);
            at = m.end();
        }
        self.next = base + at.max(lim) as u64;
    }
}

/// The bytes `[\d\.e-]` can match in ASCII (a non-ASCII digit also ends a long run here).
fn is_capture_byte(c: u8) -> bool {
    c.is_ascii_digit() || c == b'.' || c == b'e' || c == b'-'
}

/// Python's `float()` on a capture of `[\d\.e-]+`: over that alphabet Rust's parser accepts
/// and rejects the same strings (`1.`, `.5`, `1e-5` yes; `-`, `.`, `e`, `1e`, `1.2.3` no).
fn py_float(s: &[u8]) -> Option<f64> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// Extract from a file: a regular one only (opened non-blocking), as every log reader; a FIFO
/// would block this read while compare's own reader had already refused it.
pub fn extract(path: &Path) -> io::Result<Extraction> {
    extract_from(modelzoo_support::input::open_regular(path, "log")?)
}

/// Extract from any reader.
pub fn extract_from<R: Read>(mut r: R) -> io::Result<Extraction> {
    let mut primary = Scan::new(&PRIMARY_RE);
    let mut fallback = Scan::new(&FALLBACK_RE);
    let mut win: Vec<u8> = Vec::with_capacity(STEP + WINDOW_KEEP);
    let mut chunk = vec![0u8; STEP];
    let mut base: u64 = 0;
    let mut eof = false;
    while !eof {
        // Scan a full window at a time, however little each read returns.
        while win.len() < STEP + WINDOW_KEEP && !eof {
            match r.read(&mut chunk) {
                Ok(0) => eof = true,
                Ok(n) => win.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let end = base + win.len() as u64;
        let limit = if eof {
            end
        } else {
            end.saturating_sub(WINDOW_KEEP as u64).max(base)
        };
        primary.scan(&win, base, limit, eof);
        // The fallback only matters while the primary pattern has found nothing.
        if primary.values.is_empty() {
            fallback.scan(&win, base, limit, eof);
        } else if fallback.next != u64::MAX {
            // Not needed any more: drop its values and stop holding the window for it.
            fallback = Scan::new(&FALLBACK_RE);
            fallback.next = u64::MAX;
        }
        let keep_from = primary.next.min(fallback.next).min(end).max(base);
        win.drain(..(keep_from - base) as usize);
        base = keep_from;
    }
    let (pattern, chosen) = if !primary.values.is_empty() {
        (Pattern::Primary, primary)
    } else if !fallback.values.is_empty() {
        (Pattern::Fallback, fallback)
    } else {
        (Pattern::None, primary)
    };
    Ok(Extraction {
        pattern,
        values: chosen.values,
        first_unparsable: chosen.first_unparsable,
    })
}

/// Read the whole of `bytes` the way loss.py does, for tests: `re.findall` on all of it.
pub fn extract_bytes(bytes: &[u8]) -> Extraction {
    extract_from(bytes).expect("reading a slice cannot fail")
}

/// loss.py's verdict on the values it extracted, as it computes it: both lists cut to the
/// shorter; mean((c-b)/b) including steps where b is 0 (inf or NaN, as numpy divides);
/// pass when that is ≤ 0.05 or mean(c-b) ≤ 0.0002 — NaN compares false, so no values at all
/// fail.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// Values per log (before the cut).
    pub baseline_values: usize,
    pub candidate_values: usize,
    pub baseline_pattern: Pattern,
    pub candidate_pattern: Pattern,
    /// Steps compared (the shorter list's length).
    pub steps: usize,
    pub mean_rel: f64,
    pub mean_diff: f64,
    /// `None` when loss.py stops with a ValueError before comparing (or a capture was too
    /// long to convert here: see `unconverted`).
    pub pass: Option<bool>,
    /// The first kept capture `float()` rejects (or too long to convert here), and whose log
    /// it is: ("baseline" | "candidate", capture).
    pub unconverted: Option<(String, Unparsable)>,
}

/// What loss.py would conclude from two extractions.
pub fn outcome(b: &Extraction, c: &Extraction) -> Outcome {
    let n = b.len().min(c.len());
    // float() runs on the kept strings only, the candidate's (sdaa) list first.
    let unconverted = [("candidate", c), ("baseline", b)]
        .into_iter()
        .find_map(|(role, e)| {
            e.first_unparsable
                .as_ref()
                .filter(|u| u.index < n)
                .map(|u| (role.to_string(), u.clone()))
        });
    let (mut rel, mut diff) = (0.0, 0.0);
    for (bv, cv) in b.values[..n].iter().zip(&c.values[..n]) {
        rel += (cv - bv) / bv;
        diff += cv - bv;
    }
    let (mean_rel, mean_diff) = (rel / n as f64, diff / n as f64);
    let pass = unconverted
        .is_none()
        .then_some(mean_rel <= 0.05 || mean_diff <= 0.0002);
    Outcome {
        baseline_values: b.len(),
        candidate_values: c.len(),
        baseline_pattern: b.pattern,
        candidate_pattern: c.pattern,
        steps: n,
        mean_rel,
        mean_diff,
        pass,
        unconverted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Python's `re.findall` + `float()` give, worked out by hand.
    #[test]
    fn extraction_follows_loss_py_patterns() {
        let log =
            b"TCAPPDLL x - Epoch: 0 Iteration: 0  rank : 0  train.loss : 1.5  train.ips : 3\n\
TCAPPDLL x - Epoch: 0 Iteration: 1  rank : 1  train.loss : 9.0\n\
TCAPPDLL x - Epoch: 0 Iteration: 1  rank : 0  train.loss : nan\n\
TCAPPDLL x - Epoch: 0 Iteration: 2  rank : 0  train_loss : 2.5e-1 glued rank : 0  trainXloss : -\n\
loss 7\n";
        let e = extract_bytes(log);
        assert_eq!(e.pattern, Pattern::Primary);
        assert_eq!(e.values[..2], [1.5, 0.25]);
        assert!(e.values[2].is_nan());
        let u = e.first_unparsable.unwrap();
        assert_eq!((u.index, u.text.as_str()), (2, "-"));

        // RegNet-style spelling: neither pattern reads it.
        let regnet = b"TCAPPDLL x - Epoch: 0 Iteration: 1 rank: 0 train.loss : 1.25\n";
        let e = extract_bytes(regnet);
        assert_eq!((e.pattern, e.len()), (Pattern::None, 0));

        // The fallback, only when the primary pattern finds nothing; every match of a line.
        let e = extract_bytes(b"step 1 loss 2.0 val loss 3.0\nloss nan\n");
        assert_eq!(
            (e.pattern, e.values.clone()),
            (Pattern::Fallback, vec![2.0, 3.0])
        );
    }

    #[test]
    fn window_boundaries_do_not_change_the_result() {
        // Matches straddle every window boundary; a capture longer than the window context is
        // one float() rejects here (and its tail is not read as another value).
        let mut log = Vec::new();
        let mut want = Vec::new();
        for i in 0..40_000u32 {
            let v = i as f64 / 8.0;
            log.extend_from_slice(format!("rank : 0  train.loss : {v}\n").as_bytes());
            want.push(v);
        }
        log.extend_from_slice(b"rank : 0  train.loss : ");
        log.extend(std::iter::repeat_n(b'1', 3 * WINDOW_KEEP));
        log.extend_from_slice(b" loss 5 rank : 0  train.loss : 4.5 rank : 0  train.loss : ");
        log.extend(std::iter::repeat_n(b'2', MAX_CAPTURE + 1));
        want.extend([f64::NAN, 4.5, f64::NAN]);
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(buf.len()).min(self.1);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        for chunk in [1usize, 7, 4095, 65536, usize::MAX] {
            let e = extract_from(Trickle(&log, chunk)).unwrap();
            assert_eq!(e.len(), want.len(), "chunk {chunk}");
            for (i, (g, w)) in e.values.iter().zip(&want).enumerate() {
                assert!(g == w || (g.is_nan() && w.is_nan()), "chunk {chunk} [{i}]");
            }
            let u = e.first_unparsable.unwrap();
            assert_eq!((u.index, u.too_long), (40_000, true), "chunk {chunk}");
        }
    }

    #[test]
    fn outcome_as_loss_py_computes_it() {
        let ex = |v: &[f64]| Extraction {
            pattern: Pattern::Primary,
            values: v.to_vec(),
            first_unparsable: None,
        };
        // No values: mean of nothing is NaN, both comparisons false.
        let o = outcome(&ex(&[]), &ex(&[1.0]));
        assert_eq!((o.steps, o.pass), (0, Some(false)));
        // Cut to the shorter; a zero baseline makes the relative mean infinite.
        let o = outcome(&ex(&[2.0, 0.0, 5.0]), &ex(&[2.0, 0.1]));
        assert_eq!(o.steps, 2);
        assert!(o.mean_rel.is_infinite());
        assert!((o.mean_diff - 0.05).abs() < 1e-15);
        assert_eq!(o.pass, Some(false));
        // A rejected capture among the kept strings: ValueError, no verdict.
        let mut bad = ex(&[1.0, f64::NAN]);
        bad.first_unparsable = Some(Unparsable {
            index: 1,
            text: "-".into(),
            too_long: false,
        });
        let o = outcome(&ex(&[1.0, 1.0]), &bad);
        assert_eq!(o.pass, None);
        assert_eq!(o.unconverted.unwrap().0, "candidate");
        // ... but not beyond the cut.
        assert_eq!(outcome(&ex(&[1.0]), &bad).pass, Some(true));
    }
}
