//! CSV metric logs (`step,loss` then `1,0.028870`): the NLP models of the public ModelZoo
//! write them. A row means nothing without its header, so unlike the other formats this one
//! needs state: the reader keeps the last header it saw ([`Header`], at most [`MAX_COLUMNS`]
//! short names — bounded memory) and reads the rows under it.

use crate::parse::parse_number;
use crate::record::Record;

/// Most columns a header may have; a longer comma-separated line is not a metric header.
pub(crate) const MAX_COLUMNS: usize = 256;

/// The longest column name kept.
const MAX_NAME: usize = 128;

/// What a column holds.
#[derive(Debug, Clone, PartialEq)]
enum Column {
    /// `epoch`: the record's epoch.
    Epoch,
    /// `step`, `iteration`, `iter`, `global_step`: the record's iteration.
    Iteration,
    /// `rank`: the record's rank.
    Rank,
    /// Any other name: a metric.
    Metric(String),
}

/// A CSV header: a step-like column and at least one metric column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Header {
    columns: Vec<Column>,
}

/// What a line is under a header.
#[derive(Debug, PartialEq)]
pub(crate) enum Row {
    /// A row of the header's width, every field a number (or empty).
    Record(Record),
    /// Numbers separated by commas, but not a row of this header (another width, a step that
    /// is not a non-negative integer).
    Malformed,
    /// Not a CSV row: the line is read as any other line.
    Other,
}

/// A header line: comma-separated names (a letter or `_`, then letters, digits, `_`, `.`,
/// `-`, `/`, `@`; spaces around them allowed), one of them step-like (`step`, `iteration`,
/// `iter`, `global_step`, `epoch`) and one a metric. Cheap to reject: log lines fail on their
/// first character outside that alphabet.
pub(crate) fn header(line: &[u8]) -> Option<Header> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if !line
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        || !line.iter().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, b',' | b'_' | b'.' | b'-' | b'/' | b'@' | b' ')
        })
        || memchr::memchr(b',', line).is_none()
    {
        return None;
    }
    let mut columns = Vec::new();
    for field in line.split(|&c| c == b',') {
        let name = trim(field);
        let ok = name.len() <= MAX_NAME
            && name
                .first()
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
            && !name.contains(&b' ');
        if !ok || columns.len() == MAX_COLUMNS {
            return None;
        }
        columns.push(match name.to_ascii_lowercase().as_slice() {
            b"epoch" => Column::Epoch,
            b"step" | b"iteration" | b"iter" | b"global_step" => Column::Iteration,
            b"rank" => Column::Rank,
            _ => Column::Metric(String::from_utf8_lossy(name).into_owned()),
        });
    }
    let stepped = columns
        .iter()
        .any(|c| matches!(c, Column::Epoch | Column::Iteration));
    let metric = columns.iter().any(|c| matches!(c, Column::Metric(_)));
    (stepped && metric).then_some(Header { columns })
}

impl Header {
    /// Reads `line` as a row of this header.
    pub(crate) fn row(&self, line: &[u8]) -> Row {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // A row is numbers and commas: anything else is another kind of line.
        if !line
            .first()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b','))
            || memchr::memchr(b',', line).is_none()
        {
            return Row::Other;
        }
        let fields = line.split(|&c| c == b',').count();
        let mut rec = Record {
            epoch: None,
            iteration: None,
            val_iteration: None,
            rank: 0,
            step_name: None,
            metrics: Vec::new(),
        };
        let mut numbers = true;
        for (field, column) in line.split(|&c| c == b',').zip(&self.columns) {
            let field = trim(field);
            if field.is_empty() {
                continue;
            }
            let Some(v) = parse_number(field) else {
                numbers = false;
                continue;
            };
            let whole = (0.0..1.8e19).contains(&v) && v.fract() == 0.0;
            match column {
                Column::Epoch if whole => rec.epoch = Some(v as u64),
                Column::Iteration if whole => rec.iteration = Some(v as u64),
                Column::Rank if whole && v <= u32::MAX as f64 => rec.rank = v as u32,
                Column::Metric(name) => rec.metrics.push((name.clone(), v)),
                _ => return Row::Malformed,
            }
        }
        if !numbers {
            return Row::Other;
        }
        if fields != self.columns.len() {
            return Row::Malformed;
        }
        if rec.metrics.is_empty() {
            return Row::Other;
        }
        Row::Record(rec)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_need_a_step_and_a_metric_and_rows_their_width() {
        assert!(header(b"step,loss").is_some());
        assert!(header(b"epoch, step, loss, lr\r").is_some());
        assert!(header(b"loss,lr").is_none(), "no step column");
        assert!(header(b"step,epoch").is_none(), "no metric column");
        assert!(header(b"W0515 torchrun, something").is_none());
        assert!(header(b"Namespace(model='x', lr=0.1)").is_none());
        assert!(header(b"step").is_none());
        let h = header(b"step,loss,lr").unwrap();
        let Row::Record(r) = h.row(b"3,0.25,0.1") else {
            panic!()
        };
        assert_eq!(
            (r.iteration, r.get("loss"), r.get("lr")),
            (Some(3), Some(0.25), Some(0.1))
        );
        assert_eq!(h.row(b"3,0.25"), Row::Malformed);
        assert_eq!(h.row(b"3.5,0.25,0.1"), Row::Malformed);
        assert_eq!(h.row(b"TCAPPDLL {}"), Row::Other);
        assert_eq!(h.row(b"1, two, 3"), Row::Other);
        assert_eq!(h.row(b""), Row::Other);
    }
}
