//! Detection training logs (docs/compare.md, "Detection logs"): the lines torchvision's
//! detection references, DETR and Deformable-DETR print through their `MetricLogger`,
//! mmdetection 2.x's (mmcv) and 3.x's (mmengine) log lines, and pycocotools' COCO evaluation
//! summary. Read before the loss-line rule, which would take every sub-loss of these lines as
//! its own metric and number a line by its in-epoch counter only.
//!
//! - `MetricLogger` (`Epoch: [0]  [ 10/118]  eta: 0:01:02  lr: 0.000200  loss: 34.5187
//!   (35.1234)  loss_ce: 2.1100 (2.2000)  …  time: 0.5102  data: 0.0123  max mem: 1234`): the
//!   value before a bracket is the median of the meter's window (the last 20 updates), the
//!   bracketed one the global average; the median is the step's value, named `train.<meter>`
//!   (`train.loss`, `train.loss_ce`). The record's epoch is the header's and its iteration the
//!   global step, `epoch × len + i`. Evaluation lines (a `Test:` header) give nothing: their
//!   `Averaged stats:` line does.
//! - `Averaged stats: …` (the epoch's global averages, the bracketed values): `train.avg_<meter>`
//!   after training lines, `val.<meter>` after evaluation lines.
//! - mmdetection: `Epoch [1][50/500]\tlr: 1.000e-02, …, loss_cls: 0.8, loss: 1.8` (2.x) and
//!   `Epoch(train) [1][ 50/500]  lr: 1.0000e-02  …  loss: 1.8  loss_rpn_cls: 0.5` (3.x), also
//!   `Iter [50/90000]` / `Iter(train) [50/90000]`: `train.<name>`, the global step
//!   `(epoch − 1) × len + iter` (both count from 1); `Epoch(val) [1][500]\tbbox_mAP: 0.374, …`
//!   and `Epoch(val) [1][500/500]  coco/bbox_mAP: 0.3740  …` give `val.mAP`, `val.AP50`, ….
//! - the COCO summary, ` Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ]
//!   = 0.570` and its 11 siblings: `val.mAP`, `val.AP50`, `val.AP75`, `val.APs` / `APm` /
//!   `APl`, `val.AR1` / `AR10` / `AR100`, `val.ARs` / `ARm` / `ARl`; after an `IoU metric: segm`
//!   (torchvision), `Evaluate annotation type *segm*` (pycocotools) or `Evaluating segm...`
//!   (mmdet 3.x) header they are `val.segm_mAP`, …; `-1.000` (no object of that size) is no
//!   value. The epoch is the latest training line's.
//!
//! Timing and memory entries (`eta`, `time`, `data`, `data_time`, `model_time`, `memory`,
//! `max mem`) are not metrics. What one line says about the next (the epoch, an evaluation
//! phase, the IoU type of a summary) is [`State`], kept by the reader.

use std::sync::LazyLock;

use memchr::memmem;

use super::console::{is_eval_word, number, number_after};
use super::empty_record;
use crate::record::{LogFormat, Record};

/// What earlier lines of a detection log say about the next ones.
#[derive(Debug, Default, Clone)]
pub(crate) struct State {
    /// The epoch of the latest training line: evaluation results belong to it.
    epoch: Option<u64>,
    /// The latest `MetricLogger` line was an evaluation's (`Test:`): its `Averaged stats:` are
    /// evaluation values.
    in_eval: bool,
    /// The IoU type of the COCO summary being printed.
    iou: IouType,
}

/// Which results a COCO summary is about (pycocotools' `iouType`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum IouType {
    #[default]
    Bbox,
    Segm,
    Keypoints,
}

impl IouType {
    fn from_word(w: &[u8]) -> Option<IouType> {
        match w {
            b"bbox" => Some(IouType::Bbox),
            b"segm" => Some(IouType::Segm),
            b"keypoints" => Some(IouType::Keypoints),
            _ => None,
        }
    }

    /// The metric name prefix: boxes are the default, `val.mAP`.
    fn prefix(self) -> &'static str {
        match self {
            IouType::Bbox => "",
            IouType::Segm => "segm_",
            IouType::Keypoints => "keypoints_",
        }
    }
}

/// What [`parse`] made of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Claim {
    /// Not a detection line: the loss-line rule reads it.
    No,
    /// A detection line with nothing to compare (an evaluation step, a header, a training line
    /// without a loss).
    Meta,
    /// Records were pushed.
    Records,
}

/// Most `name: value` pairs read from one line (a longer list is not a log line's).
const MAX_PAIRS: usize = 256;

/// The longest metric name read.
const MAX_NAME: usize = 128;

static ETA: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"eta: "));
static AVERAGE: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"Average"));
static IOU: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"IoU metric: "));
static EVALUATING: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"Evaluating "));

/// Reads a detection line into `out`, updating `st`. Each search looks at the first match
/// only, so a line is read in linear time whatever it holds; the searches for bracketed
/// forms run only on lines with a `[`, which keeps the lines of other formats cheap.
pub(super) fn parse(line: &[u8], st: &mut State, out: &mut Vec<(LogFormat, Record)>) -> Claim {
    if let Some(first) = memchr::memchr(b'[', line) {
        if let Some(at) = ETA.find(&line[first..]) {
            if let Some(c) = metric_logger(line, first + at, st, out) {
                return c;
            }
        }
        // mmdetection: `Epoch` / `Iter` (and a mode) right before one of the first brackets.
        for open in memchr::memchr_iter(b'[', line).take(3) {
            if let Some((at, len)) = label_before(line, open) {
                if let Some(c) = mmdet(line, at, len, st, out) {
                    return c;
                }
            }
        }
    }
    if let Some(at) = AVERAGE.find(line) {
        let rest = &line[at..];
        if let Some(body) = rest.strip_prefix(b"Averaged stats:") {
            return averaged_stats(body, st, out);
        }
        if let Some(c) = coco_row(rest, st, out) {
            return c;
        }
    }
    iou_header(line, st).unwrap_or(Claim::No)
}

/// The header naming the IoU type of the COCO summary that follows: `IoU metric: segm`
/// (torchvision, DETR), `Evaluate annotation type *segm*` (pycocotools), `Evaluating
/// segm...` (mmdetection 3.x).
fn iou_header(line: &[u8], st: &mut State) -> Option<Claim> {
    let word_after = |from: usize| -> (&[u8], &[u8]) {
        let rest = &line[from..];
        let n = rest.iter().take_while(|c| c.is_ascii_alphabetic()).count();
        (&rest[..n], &rest[n..])
    };
    let (word, ends) = if let Some(at) = IOU.find(line) {
        let (w, after) = word_after(at + IOU.needle().len());
        (w, after.iter().all(u8::is_ascii_whitespace))
    } else if let Some(star) =
        memchr::memchr(b'*', line).filter(|&s| line[..s].ends_with(b"annotation type "))
    {
        let (w, after) = word_after(star + 1);
        (w, after.first() == Some(&b'*'))
    } else if let Some(at) = EVALUATING.find(line) {
        let (w, after) = word_after(at + EVALUATING.needle().len());
        (
            w,
            after.starts_with(b"...") || after.iter().all(u8::is_ascii_whitespace),
        )
    } else {
        return None;
    };
    let t = IouType::from_word(word).filter(|_| ends)?;
    st.iou = t;
    Some(Claim::Meta)
}

/// `Epoch` or `Iter`, maybe with a `(mode)`, then spaces before the `[` at `open`: where the
/// label starts and its length.
fn label_before(line: &[u8], open: usize) -> Option<(usize, usize)> {
    let mut e = open;
    while e > 0 && line[e - 1] == b' ' {
        e -= 1;
    }
    if e > 0 && line[e - 1] == b')' {
        let start = e.saturating_sub(10);
        e = start + memchr::memrchr(b'(', &line[start..e - 1])?;
    }
    let head = &line[..e];
    if head.ends_with(b"Epoch") {
        Some((e - 5, 5))
    } else if head.ends_with(b"Iter") {
        Some((e - 4, 4))
    } else {
        None
    }
}

/// A `MetricLogger.log_every` line: `<header>  [ i/len]  eta: …  <meters>`; `eta` is at `at`.
fn metric_logger(
    line: &[u8],
    at: usize,
    st: &mut State,
    out: &mut Vec<(LogFormat, Record)>,
) -> Option<Claim> {
    let (open, i, len) = counter_before(line, at)?;
    let header = &line[..open];
    if has_eval_word(header) {
        st.in_eval = true;
        return Some(Claim::Meta);
    }
    let epoch = epoch_in(header);
    st.in_eval = false;
    st.iou = IouType::Bbox;
    if epoch.is_some() {
        st.epoch = epoch;
    }
    let mut rec = empty_record();
    rec.epoch = epoch;
    rec.iteration = Some(match epoch {
        Some(e) => e.saturating_mul(len).saturating_add(i),
        None => i,
    });
    Some(push_training(rec, &line[at..], out))
}

/// The `[ i/len]` counter right before `at` (past spaces and tabs): where its `[` is, `i`
/// and `len`.
fn counter_before(line: &[u8], at: usize) -> Option<(usize, u64, u64)> {
    let mut e = at;
    while e > 0 && matches!(line[e - 1], b' ' | b'\t') {
        e -= 1;
    }
    if e == 0 || line[e - 1] != b']' {
        return None;
    }
    let open = memchr::memrchr(b'[', &line[..e - 1])?;
    let inside = &line[open + 1..e - 1];
    let slash = memchr::memchr(b'/', inside)?;
    let i = small_int(trim_spaces(&inside[..slash]))?;
    let len = small_int(trim_spaces(&inside[slash + 1..]))?;
    Some((open, i, len))
}

/// A non-negative integer of digits only.
fn small_int(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

fn trim_spaces(s: &[u8]) -> &[u8] {
    let a = s.iter().position(|&c| c != b' ').unwrap_or(s.len());
    let b = s.iter().rposition(|&c| c != b' ').map_or(a, |p| p + 1);
    &s[a..b.max(a)]
}

/// Whether a header's words include an evaluation word (`Test:`, `Eval`, `val`).
fn has_eval_word(header: &[u8]) -> bool {
    header
        .split(|c| !c.is_ascii_alphabetic())
        .any(|w| !w.is_empty() && is_eval_word(w))
}

/// The number after the word `epoch` (any case) in a header: `Epoch: [3]`.
fn epoch_in(header: &[u8]) -> Option<u64> {
    let mut from = 0;
    while let Some(off) = memchr::memchr2(b'E', b'e', &header[from..]) {
        let p = from + off;
        from = p + 1;
        let word_start = p == 0 || !header[p - 1].is_ascii_alphanumeric();
        if word_start
            && header.len() >= p + 5
            && header[p..p + 5].eq_ignore_ascii_case(b"epoch")
            && header.get(p + 5).is_none_or(|c| !c.is_ascii_alphabetic())
        {
            return number_after(header, p + 5);
        }
    }
    None
}

/// A training line's meters as `train.<name>` (the first value of each: a window's median),
/// when one of them is a loss.
fn push_training(mut rec: Record, body: &[u8], out: &mut Vec<(LogFormat, Record)>) -> Claim {
    let mut has_loss = false;
    for (name, value, _) in pairs(body) {
        if is_timing(name) {
            continue;
        }
        has_loss |= is_loss(name);
        push_metric(
            &mut rec,
            format!("train.{}", String::from_utf8_lossy(name)),
            value,
        );
    }
    if !has_loss {
        return Claim::Meta;
    }
    out.push((LogFormat::Detection, rec));
    Claim::Records
}

fn push_metric(rec: &mut Record, key: String, value: f64) {
    if !rec.metrics.iter().any(|(k, _)| *k == key) {
        rec.metrics.push((key, value));
    }
}

/// `Averaged stats: <meters>`: the bracketed global averages, as `train.avg_<name>` or, after
/// an evaluation's lines, `val.<name>`. Meters printed with one value (`lr`, `class_error`:
/// the last value, not an average) are left out.
fn averaged_stats(body: &[u8], st: &State, out: &mut Vec<(LogFormat, Record)>) -> Claim {
    let mut rec = empty_record();
    rec.epoch = st.epoch;
    for (name, _, avg) in pairs(body) {
        let Some(avg) = avg else { continue };
        if is_timing(name) {
            continue;
        }
        let name = String::from_utf8_lossy(name);
        let key = if st.in_eval {
            format!("val.{name}")
        } else {
            format!("train.avg_{name}")
        };
        push_metric(&mut rec, key, avg);
    }
    if rec.metrics.is_empty() {
        return Claim::Meta;
    }
    out.push((LogFormat::Detection, rec));
    Claim::Records
}

/// `name: value` pairs of whitespace-separated tokens: a token ending in `:` names the next
/// token's number (a trailing `,` / `;` allowed: mmdet 2.x); a token `(<number>)` right after
/// is its average. Values that are not numbers (`eta: 0:01:02`) are passed over.
fn pairs(s: &[u8]) -> Vec<(&[u8], f64, Option<f64>)> {
    let mut out = Vec::new();
    let mut toks = s
        .split(|c| matches!(c, b' ' | b'\t'))
        .filter(|t| !t.is_empty())
        .peekable();
    while let Some(t) = toks.next() {
        if out.len() == MAX_PAIRS {
            break;
        }
        let Some(name) = t.strip_suffix(b":") else {
            continue;
        };
        if !is_name(name) {
            continue;
        }
        let Some(value) = toks.peek().and_then(|v| value_token(v)) else {
            continue;
        };
        toks.next();
        let avg = toks
            .peek()
            .and_then(|t| t.strip_prefix(b"("))
            .map(strip_sep)
            .and_then(|t| t.strip_suffix(b")"))
            .and_then(value_token);
        if avg.is_some() {
            toks.next();
        }
        out.push((name, value, avg));
    }
    out
}

/// A token that is one number (a trailing `,` / `;` allowed).
fn value_token(t: &[u8]) -> Option<f64> {
    let t = strip_sep(t);
    match number(t) {
        Some((v, n)) if n == t.len() => Some(v),
        _ => None,
    }
}

fn strip_sep(t: &[u8]) -> &[u8] {
    t.strip_suffix(b",")
        .or_else(|| t.strip_suffix(b";"))
        .unwrap_or(t)
}

/// A meter name: a letter or `_`, then letters, digits, `_`, `.`, `-`, `@`, `/`.
fn is_name(name: &[u8]) -> bool {
    name.first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && name.len() <= MAX_NAME
        && name
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'@' | b'/'))
}

/// Timing and memory entries: how long and how big, not what was computed.
fn is_timing(name: &[u8]) -> bool {
    matches!(
        name,
        b"eta" | b"time" | b"data" | b"mem" | b"memory" | b"max_mem"
    ) || name.ends_with(b"_time")
}

/// A name with a `loss` part (`loss`, `loss_ce`, `loss_bbox_unscaled`).
fn is_loss(name: &[u8]) -> bool {
    name.split(|&c| c == b'_' || c == b'.')
        .any(|p| p.eq_ignore_ascii_case(b"loss"))
}

/// An mmdetection line: `Epoch [e][i/len]`, `Epoch(mode) [e][i/len]`, `Iter [i/max]`,
/// `Iter(mode) [i/max]` (`mode` `train`, `val` or `test`), then its pairs. The label
/// (`Epoch` / `Iter`, `label_len` bytes) is at `at`.
fn mmdet(
    line: &[u8],
    at: usize,
    label_len: usize,
    st: &mut State,
    out: &mut Vec<(LogFormat, Record)>,
) -> Option<Claim> {
    if at > 0 && line[at - 1].is_ascii_alphanumeric() {
        return None;
    }
    let by_epoch = label_len == 5;
    let mut p = at + label_len;
    let mut eval = false;
    if line.get(p) == Some(&b'(') {
        let close = memchr::memchr(b')', &line[p..]).filter(|&n| n <= 8)?;
        match &line[p + 1..p + close] {
            b"train" => {}
            b"val" | b"test" => eval = true,
            _ => return None,
        }
        p += close + 1;
    }
    let mut brackets: [Option<(u64, Option<u64>)>; 2] = [None, None];
    for slot in brackets.iter_mut().take(if by_epoch { 2 } else { 1 }) {
        while line.get(p) == Some(&b' ') {
            p += 1;
        }
        if line.get(p) != Some(&b'[') {
            return None;
        }
        let close = memchr::memchr(b']', &line[p..]).filter(|&n| n <= 42)?;
        let inside = &line[p + 1..p + close];
        *slot = Some(match memchr::memchr(b'/', inside) {
            Some(s) => (
                small_int(trim_spaces(&inside[..s]))?,
                Some(small_int(trim_spaces(&inside[s + 1..]))?),
            ),
            None => (small_int(trim_spaces(inside))?, None),
        });
        p += close + 1;
    }
    if !line.get(p).is_some_and(|c| matches!(c, b' ' | b'\t')) {
        return None;
    }
    let body = &line[p..];
    let (epoch, iteration) = if by_epoch {
        let (e, _) = brackets[0]?;
        let (i, len) = brackets[1]?;
        let global = match len {
            Some(len) => e.saturating_sub(1).saturating_mul(len).saturating_add(i),
            None => i,
        };
        (Some(e), global)
    } else {
        (None, brackets[0]?.0)
    };
    if eval {
        return Some(mmdet_eval(body, epoch.or(st.epoch), out));
    }
    if epoch.is_some() {
        st.epoch = epoch;
    }
    st.iou = IouType::Bbox;
    let mut rec = empty_record();
    rec.epoch = epoch;
    rec.iteration = Some(iteration);
    Some(push_training(rec, body, out))
}

/// An mmdetection evaluation line's results: `bbox_mAP` (`coco/bbox_mAP`) → `val.mAP`,
/// `bbox_mAP_50` → `val.AP50`, `segm_mAP` → `val.segm_mAP`, … (the COCO summary's names);
/// other names (`mAP`, `AP50` of VOC) as `val.<name>`.
fn mmdet_eval(body: &[u8], epoch: Option<u64>, out: &mut Vec<(LogFormat, Record)>) -> Claim {
    let mut rec = empty_record();
    rec.epoch = epoch;
    for (name, value, _) in pairs(body) {
        if is_timing(name) || name.ends_with(b"_copypaste") {
            continue;
        }
        let key = match mmdet_ap_name(name) {
            Some(n) => format!("val.{n}"),
            None => format!("val.{}", String::from_utf8_lossy(name)),
        };
        push_metric(&mut rec, key, value);
    }
    if rec.metrics.is_empty() {
        return Claim::Meta;
    }
    out.push((LogFormat::Detection, rec));
    Claim::Records
}

/// `[<dataset>/]<type>_mAP[_50|_75|_s|_m|_l]` → the COCO summary's name (`mAP`, `AP50`,
/// `segm_APs`).
fn mmdet_ap_name(name: &[u8]) -> Option<String> {
    let base = match memchr::memrchr(b'/', name) {
        Some(s) => &name[s + 1..],
        None => name,
    };
    let m = memmem::find(base, b"_mAP")?;
    let kind = &base[..m];
    if kind.is_empty() || !kind.iter().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let ap = match &base[m + 4..] {
        b"" => "mAP",
        b"_50" => "AP50",
        b"_75" => "AP75",
        b"_s" => "APs",
        b"_m" => "APm",
        b"_l" => "APl",
        _ => return None,
    };
    let prefix = match kind {
        b"bbox" => String::new(),
        k => format!("{}_", String::from_utf8_lossy(k)),
    };
    Some(format!("{prefix}{ap}"))
}

/// One row of pycocotools' summary, from `Average Precision` / `Average Recall` on.
fn coco_row(rest: &[u8], st: &mut State, out: &mut Vec<(LogFormat, Record)>) -> Option<Claim> {
    let ap = if rest.starts_with(b"Average Precision") {
        true
    } else if rest.starts_with(b"Average Recall") {
        false
    } else {
        return None;
    };
    let open = memmem::find(rest, b"@[")?;
    let close = open + memchr::memchr(b']', &rest[open..])?;
    let mut fields = rest[open + 2..close].split(|&c| c == b'|').map(trim_spaces);
    let iou = fields.next()?.strip_prefix(b"IoU=")?;
    let area = trim_spaces(fields.next()?.strip_prefix(b"area=")?);
    let max_dets = small_int(trim_spaces(fields.next()?.strip_prefix(b"maxDets=")?))?;
    let after = trim_spaces(&rest[close + 1..]);
    let value = value_token(trim_spaces(after.strip_prefix(b"=")?))?;
    let name = coco_name(ap, trim_spaces(iou), area, max_dets);
    let prefix = st.iou.prefix();
    if !ap && area == b"large" {
        st.iou = IouType::Bbox; // the summary's last row: a header names the next one
    }
    // -1 is pycocotools' "no ground truth of this kind": no value.
    let (Some(name), true) = (name, value >= 0.0) else {
        return Some(Claim::Meta);
    };
    let mut rec = empty_record();
    rec.epoch = st.epoch;
    rec.metrics.push((format!("val.{prefix}{name}"), value));
    out.push((LogFormat::Detection, rec));
    Some(Claim::Records)
}

/// The name of a summary row: `mAP` (AP at IoU 0.50:0.95 over all areas), `AP50`, `AP75`,
/// `APs` / `APm` / `APl`; `AR<maxDets>` (`AR1`, `AR10`, `AR100`), `AR50`, `AR75`, `ARs` /
/// `ARm` / `ARl`. Other rows (custom thresholds) have none.
fn coco_name(ap: bool, iou: &[u8], area: &[u8], max_dets: u64) -> Option<String> {
    let t = if ap { "AP" } else { "AR" };
    let all_ious = iou == b"0.50:0.95";
    Some(match (area, iou) {
        (b"all", _) if all_ious && ap => "mAP".to_string(),
        (b"all", _) if all_ious => format!("AR{max_dets}"),
        (b"all", b"0.50") => format!("{t}50"),
        (b"all", b"0.75") => format!("{t}75"),
        (b"small", _) if all_ious => format!("{t}s"),
        (b"medium", _) if all_ious => format!("{t}m"),
        (b"large", _) if all_ious => format!("{t}l"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> Vec<Record> {
        let mut st = State::default();
        let mut out = Vec::new();
        for l in lines {
            parse(l.as_bytes(), &mut st, &mut out);
        }
        out.into_iter().map(|(_, r)| r).collect()
    }

    #[test]
    fn pairs_take_the_value_and_the_bracketed_average() {
        let p = pairs(b"eta: 0:01:02  lr: 0.000200  loss: 34.5187 (35.1234)  max mem: 12");
        let got: Vec<(&[u8], f64, Option<f64>)> = p;
        assert_eq!(
            got,
            [
                (&b"lr"[..], 0.0002, None),
                (&b"loss"[..], 34.5187, Some(35.1234)),
                (&b"mem"[..], 12.0, None)
            ]
        );
        // mmdet 2.x: comma-separated, an `eta` with a comma inside (timing is dropped later).
        let p = pairs(b"lr: 1.978e-03, eta: 1 day, 0:12:00, loss: 1.9220");
        assert_eq!(
            p,
            [
                (&b"lr"[..], 1.978e-3, None),
                (&b"eta"[..], 1.0, None),
                (&b"loss"[..], 1.922, None)
            ]
        );
    }

    #[test]
    fn summary_rows_are_named_by_their_fields() {
        assert_eq!(coco_name(true, b"0.50:0.95", b"all", 100).unwrap(), "mAP");
        assert_eq!(coco_name(true, b"0.75", b"all", 100).unwrap(), "AP75");
        assert_eq!(coco_name(false, b"0.50:0.95", b"all", 10).unwrap(), "AR10");
        assert_eq!(
            coco_name(false, b"0.50:0.95", b"medium", 100).unwrap(),
            "ARm"
        );
        assert_eq!(coco_name(true, b"0.60", b"all", 100), None);
        assert_eq!(mmdet_ap_name(b"coco/segm_mAP_75").unwrap(), "segm_AP75");
        assert_eq!(mmdet_ap_name(b"bbox_mAP").unwrap(), "mAP");
        assert_eq!(mmdet_ap_name(b"bbox_mAP_copypaste"), None);
        assert_eq!(mmdet_ap_name(b"mAP"), None);
    }

    #[test]
    fn a_hostile_line_is_read_once() {
        for unit in [
            "eta: ",
            "] eta: ",
            "Average Precision @[",
            "loss: 1 (",
            "Epoch [1]",
        ] {
            let line = unit.repeat((1 << 20) / unit.len());
            let _ = read(&[&line]);
        }
    }
}
