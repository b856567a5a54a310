//! Console output of scripts that print their losses instead of logging them: the loss-line
//! rule, and epoch summaries. Byte-level like the rest of the parser, and cheap on the lines
//! that hold no loss (two substring searches), which are most of a console.
//!
//! The loss-line rule (docs/compare.md): a name whose `_`/`.`-separated parts include the
//! word `loss` (`loss`, `Loss`, `LOSS`, `train_loss`, `Loss_D`, `loss_cls`), then `:`, `=` or
//! spaces, then a number (scientific notation, `nan`/`inf`/`NaN`/`Infinity` with a sign, or
//! `tensor(<number>, ...)`). A bracketed running average after it is not a second value.
//! Each loss name on a line is its own metric; the bare word is named `loss`, others as
//! printed. Losses of evaluation lines (a `test`/`val`/`valid`/`eval`/`dev` word before the
//! first loss of the line, or in the name) are `val.<name>` (`val.loss`); a loss right after
//! `Average`/`Avg.`/`mean` outside evaluation is a training summary, `train.avg_<name>`.
//! The step is what the text before the first loss says (`epoch 3`, `iter 10`, `[0/25][5/1563]`,
//! `200/2983 batches`, a tqdm counter), and `rank N` / `[RANK1]` the rank. A Python dict print
//! (`{'loss': 0.1, 'grad_norm': 1.2}`, the Hugging Face Trainer) gives its numeric entries,
//! `eval_<x>` as `val.<x>`, and the final `train_runtime` dict's `train_loss` as
//! `train.avg_loss`. tqdm redraws its bar with `\r` on one physical line: of consecutive
//! refreshes with the same step only the last is kept.

use std::sync::LazyLock;

use memchr::memmem;

use super::{empty_record, parse_py_dict, trim, trim_start};
use crate::record::{LogFormat, Record};

static LOWER_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"oss"));
static UPPER_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"OSS"));

/// Most losses read from one line segment (a longer list is not a loss line's).
const MAX_LOSSES: usize = 64;

/// The longest loss name read (a longer run of name characters is not a name).
const MAX_NAME: usize = 128;

/// Words that make a line, or a name part, an evaluation's.
const EVAL_WORDS: &[&[u8]] = &[
    b"test",
    b"testing",
    b"val",
    b"valid",
    b"validation",
    b"validate",
    b"eval",
    b"evaluate",
    b"evaluation",
    b"evaluating",
    b"dev",
];

/// Words right before a loss that make it an average over an epoch or a run.
const AVERAGE_WORDS: &[&[u8]] = &[b"average", b"avg", b"mean"];

/// Reads a line no structured format claimed: epoch summaries and loss lines, each
/// `\r`-separated segment on its own.
pub(super) fn parse(line: &[u8], out: &mut Vec<(LogFormat, Record)>) {
    if memchr::memchr(b'\r', line).is_none() {
        segment(line, out);
        return;
    }
    let start = out.len();
    for seg in line.split(|&c| c == b'\r') {
        let before = out.len();
        segment(seg, out);
        // tqdm: a refresh of the step the previous segment ended on replaces it.
        if out.len() == before + 1 && before > start {
            let (prev, new) = (&out[before - 1].1, &out[before].1);
            if new.iteration.is_some()
                && (prev.epoch, prev.iteration, prev.rank) == (new.epoch, new.iteration, new.rank)
                && prev
                    .metrics
                    .iter()
                    .map(|m| &m.0)
                    .eq(new.metrics.iter().map(|m| &m.0))
            {
                out.swap_remove(before - 1);
            }
        }
    }
}

fn segment(seg: &[u8], out: &mut Vec<(LogFormat, Record)>) {
    if memchr::memchr(b'[', seg).is_some() {
        if let Some(rec) = epoch_summary(seg) {
            out.push((LogFormat::EpochSummary, rec));
            return;
        }
    }
    let mut losses = Losses::new(seg);
    let Some(first) = losses.next_from(0) else {
        return;
    };
    let t = trim(seg);
    if t.first() == Some(&b'{') && t.last() == Some(&b'}') {
        if let Some(rec) = dict(t) {
            out.push((LogFormat::PlainLoss, rec));
        }
        return;
    }
    if let Some(rec) = loss_line(seg, first, &mut losses) {
        out.push((LogFormat::PlainLoss, rec));
    }
}

/// The `loss` word parts of a line (`loss`, `Loss`, `LOSS`, alone or between `_` / `.`), in
/// order. Each case's next match is kept until passed, so a line is searched once whatever
/// it holds.
struct Losses<'a> {
    s: &'a [u8],
    /// The next `oss` / `OSS` at or after the position last asked for: `Some(None)` once
    /// there is none.
    lo: Option<Option<usize>>,
    up: Option<Option<usize>>,
}

impl<'a> Losses<'a> {
    fn new(s: &'a [u8]) -> Self {
        Losses {
            s,
            lo: None,
            up: None,
        }
    }

    /// Where the next `loss` part whose `l` is at or after `from` starts.
    fn next_from(&mut self, from: usize) -> Option<usize> {
        let mut at = from + 1; // where its `oss` may start
        loop {
            let s = self.s;
            let next = |cached: &mut Option<Option<usize>>, f: &memmem::Finder| -> Option<usize> {
                match *cached {
                    Some(Some(p)) if p >= at => Some(p),
                    Some(None) => None,
                    _ => {
                        let p = s.get(at..).and_then(|h| f.find(h)).map(|o| at + o);
                        *cached = Some(p);
                        p
                    }
                }
            };
            let lo = next(&mut self.lo, &LOWER_FINDER);
            let up = next(&mut self.up, &UPPER_FINDER);
            let o = match (lo, up) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => a.or(b)?,
            };
            let p = o - 1; // the `l`
            at = o + 1;
            if matches!(s[p], b'l' | b'L')
                && (p == 0 || !s[p - 1].is_ascii_alphanumeric())
                && s.get(p + 4).is_none_or(|c| !c.is_ascii_alphanumeric())
            {
                return Some(p);
            }
        }
    }
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.'
}

fn is_sep(c: u8) -> bool {
    c == b'_' || c == b'.'
}

/// One line's losses: every loss name followed by a value, numbered by the text before the
/// first of them.
fn loss_line(seg: &[u8], first: usize, losses: &mut Losses) -> Option<Record> {
    let mut rec = empty_record();
    let mut ctx: Option<Context> = None;
    let mut p = Some(first);
    while let Some(at) = p {
        if rec.metrics.len() == MAX_LOSSES {
            break;
        }
        p = losses.next_from(at + 4);
        let mut a = at;
        while a > 0 && is_name_char(seg[a - 1]) {
            a -= 1;
        }
        let mut b = at + 4;
        while b < seg.len() && is_name_char(seg[b]) {
            b += 1;
        }
        while b > at + 4 && seg[b - 1] == b'.' {
            b -= 1; // `loss.` ends a sentence
        }
        if p.is_some_and(|n| n < b) {
            p = losses.next_from(b); // each name is read once
        }
        if b - a > MAX_NAME || a > 0 && matches!(seg[a - 1], b'-' | b'/' | b'\\') {
            continue; // `--loss 2`, a path
        }
        let Some(value) = value_after(seg, a, b) else {
            continue;
        };
        let c = ctx.get_or_insert_with(|| Context::read(&seg[..a]));
        let name = &seg[a..b];
        let key = if c.eval || name.split(|&c| is_sep(c)).any(is_eval_word) {
            eval_name(name)
        } else if average_before(&seg[..a]) {
            format!("train.avg_{}", normal_name(name))
        } else {
            normal_name(name)
        };
        if !rec.metrics.iter().any(|(k, _)| *k == key) {
            rec.metrics.push((key, value));
        }
    }
    let c = ctx?;
    rec.epoch = c.epoch;
    rec.iteration = c.iteration;
    rec.rank = c.rank.unwrap_or(0);
    Some(rec)
}

/// The value after the name `seg[a..b]`: an optional closing quote, `:` / `=` / spaces, then
/// a number.
fn value_after(seg: &[u8], a: usize, b: usize) -> Option<f64> {
    let mut i = b;
    if a > 0 && matches!(seg[a - 1], b'\'' | b'"') && seg.get(i) == Some(&seg[a - 1]) {
        i += 1;
    }
    let sep_start = i;
    while matches!(seg.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    if matches!(seg.get(i), Some(b':' | b'=')) {
        i += 1;
        while matches!(seg.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
    }
    if i == sep_start {
        return None;
    }
    let rest = &seg[i..];
    let rest = rest.strip_prefix(b"tensor(").unwrap_or(rest);
    number(rest).map(|(v, _)| v)
}

/// A number at the start of `s` and its length: `[+-]` then digits with an optional fraction
/// and exponent, or `nan` / `inf` / `infinity` (any case). It must end the token: a letter,
/// digit or `_` after it (`5it`), or a `.` and a digit (`1.2.3`), mean it is not a number.
pub(super) fn number(s: &[u8]) -> Option<(f64, usize)> {
    let mut i = usize::from(matches!(s.first(), Some(b'+' | b'-')));
    let negative = s.first() == Some(&b'-');
    let word = |w: &[u8]| s.len() >= i + w.len() && s[i..i + w.len()].eq_ignore_ascii_case(w);
    let special = if word(b"nan") {
        Some((f64::NAN, 3))
    } else if word(b"infinity") {
        Some((f64::INFINITY, 8))
    } else if word(b"inf") {
        Some((f64::INFINITY, 3))
    } else {
        None
    };
    let value = if let Some((v, n)) = special {
        i += n;
        if negative {
            -v
        } else {
            v
        }
    } else {
        let int = s[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += int;
        let mut frac = 0;
        if s.get(i) == Some(&b'.') {
            frac = s[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if frac > 0 || int > 0 {
                i += 1 + frac;
            }
        }
        if int + frac == 0 {
            return None;
        }
        if matches!(s.get(i), Some(b'e' | b'E')) {
            let mut j = i + 1;
            j += usize::from(matches!(s.get(j), Some(b'+' | b'-')));
            let d = s[j.min(s.len())..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if d > 0 {
                i = j + d;
            }
        }
        if i > 64 {
            return None;
        }
        std::str::from_utf8(&s[..i]).ok()?.parse::<f64>().ok()?
    };
    let ends = match s.get(i) {
        None => true,
        Some(b'.') => !s.get(i + 1).is_some_and(u8::is_ascii_digit),
        Some(&c) => !(c.is_ascii_alphanumeric() || c == b'_'),
    };
    ends.then_some((value, i))
}

/// `loss` in any case is `loss`; other names as printed.
fn normal_name(name: &[u8]) -> String {
    if name.eq_ignore_ascii_case(b"loss") {
        "loss".to_owned()
    } else {
        String::from_utf8_lossy(name).into_owned()
    }
}

/// An evaluation loss's name: `val.` and the name without its evaluation parts (`valid loss`,
/// `val_loss`, `loss_val`, `eval_loss` are all `val.loss`).
fn eval_name(name: &[u8]) -> String {
    let mut rest = Vec::with_capacity(name.len());
    for part in name.split(|&c| is_sep(c)) {
        if !is_eval_word(part) && !part.is_empty() {
            if !rest.is_empty() {
                rest.push(b'_');
            }
            rest.extend_from_slice(part);
        }
    }
    format!("val.{}", normal_name(&rest))
}

pub(super) fn is_eval_word(w: &[u8]) -> bool {
    w.len() <= 10 && EVAL_WORDS.iter().any(|e| e.eq_ignore_ascii_case(w))
}

/// Whether the word before a loss name (after spaces and a `.`) is `Average`, `Avg` or `mean`.
fn average_before(prefix: &[u8]) -> bool {
    let mut e = prefix.len();
    while e > 0 && matches!(prefix[e - 1], b' ' | b'\t') {
        e -= 1;
    }
    if e > 0 && prefix[e - 1] == b'.' {
        e -= 1;
    }
    let s = prefix[..e]
        .iter()
        .rposition(|c| !c.is_ascii_alphabetic())
        .map_or(0, |p| p + 1);
    e > s
        && AVERAGE_WORDS
            .iter()
            .any(|w| w.eq_ignore_ascii_case(&prefix[s..e]))
}

/// What the text before a line's first loss says: its step, its rank, whether it is an
/// evaluation line.
#[derive(Default)]
struct Context {
    epoch: Option<u64>,
    iteration: Option<u64>,
    rank: Option<u32>,
    eval: bool,
}

impl Context {
    /// Words `epoch`, `step`/`iter`/`iteration`/`batch`, `rank` each followed by a number
    /// (after `:`, `=`, spaces, brackets or a `(train)`), and `n/total` counters: with no
    /// `epoch` word, two counters are epoch and iteration (`[0/25][5/1563]`); otherwise the
    /// last counter is the iteration unless a step word gave it.
    fn read(prefix: &[u8]) -> Context {
        let mut c = Context::default();
        // The last two `n/total` counters, oldest first, and how many there were.
        let (mut prev, mut last, mut n_counters) = (None, None, 0usize);
        let mut step_word = None;
        let mut i = 0;
        while i < prefix.len() {
            let ch = prefix[i];
            if ch.is_ascii_alphabetic() {
                let s = i;
                while i < prefix.len() && prefix[i].is_ascii_alphabetic() {
                    i += 1;
                }
                let w = &prefix[s..i];
                if w.len() > 10 {
                    continue;
                }
                let mut lower = [0u8; 10];
                lower[..w.len()].copy_from_slice(w);
                lower[..w.len()].make_ascii_lowercase();
                match &lower[..w.len()] {
                    b"epoch" => {
                        if c.epoch.is_none() {
                            c.epoch = number_after(prefix, i);
                        }
                    }
                    b"step" | b"iter" | b"iteration" | b"batch" => {
                        if step_word.is_none() {
                            step_word = number_after(prefix, i);
                        }
                    }
                    b"rank" => {
                        if c.rank.is_none() {
                            c.rank = number_after(prefix, i).and_then(|r| u32::try_from(r).ok());
                        }
                    }
                    l => c.eval |= is_eval_word(l),
                }
            } else if ch.is_ascii_digit() {
                let s = i;
                while i < prefix.len() && prefix[i].is_ascii_digit() {
                    i += 1;
                }
                if s > 0 && prefix[s - 1] == b'.' {
                    continue;
                }
                let mut j = i;
                while prefix.get(j) == Some(&b' ') {
                    j += 1;
                }
                if prefix.get(j) != Some(&b'/') {
                    continue;
                }
                j += 1;
                while prefix.get(j) == Some(&b' ') {
                    j += 1;
                }
                let d = prefix[j..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                // A date (`2024/01/01`) or a decimal is not a counter.
                if d == 0 || matches!(prefix.get(j + d), Some(b'/' | b'.')) {
                    i = j + d;
                    continue;
                }
                if let Ok(n) = std::str::from_utf8(&prefix[s..i])
                    .unwrap_or("")
                    .parse::<u64>()
                {
                    prev = last;
                    last = Some(n);
                    n_counters += 1;
                }
                i = j + d;
            } else {
                i += 1;
            }
        }
        if c.epoch.is_none() && n_counters == 2 {
            c.epoch = prev;
        }
        c.iteration = step_word.or(last);
        c
    }
}

/// The number after a word ending at `i`: past `:`, `=`, spaces, tabs, `[` / `(` and one
/// parenthesised word (`Epoch(train) [1]`).
pub(super) fn number_after(s: &[u8], mut i: usize) -> Option<u64> {
    if s.get(i) == Some(&b'(') && s.get(i + 1).is_some_and(u8::is_ascii_alphabetic) {
        let close = memchr::memchr(b')', &s[i..]).filter(|&n| n <= 12)?;
        i += close + 1;
    }
    while matches!(
        s.get(i),
        Some(b':' | b'=' | b' ' | b'\t' | b'[' | b'(' | b'#')
    ) {
        i += 1;
    }
    let d = s
        .get(i..)?
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    // A decimal (`ms/batch 12.34`) is not a step.
    if d == 0
        || d > 19
        || s.get(i + d) == Some(&b'.') && s.get(i + d + 1).is_some_and(u8::is_ascii_digit)
    {
        return None;
    }
    std::str::from_utf8(&s[i..i + d]).ok()?.parse().ok()
}

/// A Python dict print with a loss among its entries: the numeric entries (not `epoch`),
/// `step` / `global_step` as the iteration, `eval_<x>` as `val.<x>`, and in the run's final
/// dict (it has `train_runtime`) `train_loss` as `train.avg_loss`.
fn dict(t: &[u8]) -> Option<Record> {
    let mut raw = empty_record();
    parse_py_dict(t, &mut raw).ok()?;
    let summary = raw.metrics.iter().any(|(k, _)| k == "train_runtime");
    let mut rec = empty_record();
    rec.rank = raw.rank;
    let mut has_loss = false;
    for (k, v) in raw.metrics {
        let b = k.as_bytes();
        let is_loss = b
            .split(|&c| is_sep(c))
            .any(|p| p.eq_ignore_ascii_case(b"loss"));
        has_loss |= is_loss;
        let key = match k.as_str() {
            "epoch" => continue,
            "step" | "global_step" if v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 => {
                rec.iteration = Some(v as u64);
                continue;
            }
            "train_loss" if summary => "train.avg_loss".to_owned(),
            _ if b.split(|&c| is_sep(c)).next().is_some_and(is_eval_word) => eval_name(b),
            _ if is_loss && b.split(|&c| is_sep(c)).any(is_eval_word) => eval_name(b),
            _ if is_loss => normal_name(b),
            _ => k,
        };
        if rec.metrics.len() < MAX_LOSSES && !rec.metrics.iter().any(|(n, _)| *n == key) {
            rec.metrics.push((key, v));
        }
    }
    (has_loss && !rec.metrics.is_empty()).then_some(rec)
}

// ---------------------------------------------------------------------------------------------
// Epoch summaries: `Epoch[3]: train_loss 2.5325 acc1 33.49 | val_loss 2.5057 acc1 33.52 lr 0.1`

/// Most name–value pairs read from one epoch summary (a longer line is not one).
const MAX_SUMMARY_PAIRS: usize = 256;

/// An epoch summary line: `Epoch[<n>]:` (any case, anywhere in the line, so a logging prefix
/// may precede it), then only `name value` pairs (`name: value` and `name=value` too; a value
/// may end in `%`), parts separated by `|`. The part before the first `|` is the training
/// part; a name after it that the training part already has is the validation value and is
/// named `val_<name>` (`acc1` → `val_acc1`); other names keep theirs (`val_loss`, `lr`).
/// `iter` / `iteration` / `step` pairs number the record instead of being metrics. Anything
/// else after the colon (a tqdm bar with an `Epoch[3]` description) means it is not one.
fn epoch_summary(line: &[u8]) -> Option<Record> {
    let (epoch, rest) = epoch_label(line)?;
    let mut rec = empty_record();
    rec.epoch = Some(epoch);
    let mut train_names: Vec<&[u8]> = Vec::new();
    for (part, segment) in rest.split(|&c| c == b'|').enumerate() {
        let mut tokens = segment
            .split(|c: &u8| c.is_ascii_whitespace())
            .filter(|t| !t.is_empty());
        while let Some(tok) = tokens.next() {
            let (name, value) = match tok.iter().position(|&c| c == b'=' || c == b':') {
                Some(i) if i + 1 < tok.len() => (&tok[..i], &tok[i + 1..]),
                Some(i) => (&tok[..i], tokens.next()?),
                None => (tok, tokens.next()?),
            };
            let name = name.strip_suffix(b":").unwrap_or(name);
            if !is_metric_name(name) || rec.metrics.len() >= MAX_SUMMARY_PAIRS {
                return None;
            }
            let value = summary_number(value)?;
            match name.to_ascii_lowercase().as_slice() {
                b"iter" | b"iteration" | b"step" => {
                    rec.iteration = Some(
                        ((0.0..1.8e19).contains(&value) && value.fract() == 0.0)
                            .then_some(value as u64)?,
                    );
                    continue;
                }
                b"epoch" => continue,
                _ => {}
            }
            let key = if part == 0 {
                train_names.push(name);
                String::from_utf8_lossy(name).into_owned()
            } else if train_names.contains(&name) {
                format!("val_{}", String::from_utf8_lossy(name))
            } else {
                String::from_utf8_lossy(name).into_owned()
            };
            if !rec.metrics.iter().any(|(k, _)| *k == key) {
                rec.metrics.push((key, value));
            }
        }
    }
    (!rec.metrics.is_empty()).then_some(rec)
}

/// `Epoch[<n>]:` in `line` (the word starting a token, any case): the epoch and the text
/// after the colon.
fn epoch_label(line: &[u8]) -> Option<(u64, &[u8])> {
    let mut from = 0;
    while let Some(off) = memchr::memchr(b'[', &line[from..]) {
        let open = from + off;
        from = open + 1;
        if open < 5 || !line[open - 5..open].eq_ignore_ascii_case(b"epoch") {
            continue;
        }
        if open > 5 && line[open - 6].is_ascii_alphanumeric() {
            continue;
        }
        let digits = line[open + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let close = open + 1 + digits;
        if digits == 0 || digits > 19 || line.get(close) != Some(&b']') {
            continue;
        }
        let after = trim_start(&line[close + 1..]);
        let Some(rest) = after.strip_prefix(b":") else {
            continue;
        };
        let epoch = std::str::from_utf8(&line[open + 1..close])
            .ok()?
            .parse()
            .ok()?;
        return Some((epoch, rest));
    }
    None
}

/// A metric name: a letter or `_`, then letters, digits, `_`, `.`, `-`, `@`, `/`.
fn is_metric_name(name: &[u8]) -> bool {
    name.first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && name.len() <= 128
        && name
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'@' | b'/'))
}

/// A summary value: a number, maybe followed by `%` or a separating `,` / `;`.
fn summary_number(v: &[u8]) -> Option<f64> {
    let v = v.strip_suffix(b",").or(v.strip_suffix(b";")).unwrap_or(v);
    let v = v.strip_suffix(b"%").unwrap_or(v);
    if v.is_empty()
        || !(v[0].is_ascii_digit()
            || matches!(v[0], b'-' | b'+' | b'.' | b'n' | b'N' | b'i' | b'I'))
    {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse::<f64>().ok()
}
