//! Which baseline record goes with which candidate record: by key first; the rest by order,
//! op, phase, io, index and shape (a device that runs one extra op shifts no other key, but a
//! dump from another tool or torch version may name ops differently).

use std::collections::HashMap;

use super::dump::Record;

/// How far ahead, in unmatched candidate records, the order fallback looks for a partner.
const LOOKAHEAD: usize = 256;

/// How a pair was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchedBy {
    Key,
    Order,
}

/// The pairs (baseline index, candidate index) in the baseline's execution order, and the
/// records left over on each side.
#[derive(Debug, Default)]
pub struct Pairing {
    pub pairs: Vec<(usize, usize, MatchedBy)>,
    pub only_baseline: Vec<usize>,
    pub only_candidate: Vec<usize>,
}

/// Pair `b`'s records with `c`'s.
pub fn pair(b: &[Record], c: &[Record]) -> Pairing {
    let mut by_key: HashMap<&str, usize> = HashMap::with_capacity(c.len());
    for (j, r) in c.iter().enumerate().rev() {
        by_key.insert(&r.key, j);
    }
    let mut taken = vec![false; c.len()];
    let mut partner: Vec<Option<(usize, MatchedBy)>> = vec![None; b.len()];
    for (i, r) in b.iter().enumerate() {
        if let Some(&j) = by_key.get(r.key.as_str()) {
            if !taken[j] {
                taken[j] = true;
                partner[i] = Some((j, MatchedBy::Key));
            }
        }
    }
    let free: Vec<usize> = (0..c.len()).filter(|&j| !taken[j]).collect();
    let mut cursor = 0;
    for (i, r) in b.iter().enumerate() {
        if partner[i].is_some() {
            continue;
        }
        let found = free[cursor.min(free.len())..]
            .iter()
            .take(LOOKAHEAD)
            .position(|&j| !taken[j] && same_slot(r, &c[j]));
        if let Some(p) = found {
            let j = free[cursor + p];
            taken[j] = true;
            partner[i] = Some((j, MatchedBy::Order));
            cursor += p + 1;
        }
    }
    let mut out = Pairing::default();
    for (i, p) in partner.into_iter().enumerate() {
        match p {
            Some((j, by)) => out.pairs.push((i, j, by)),
            None => out.only_baseline.push(i),
        }
    }
    out.only_candidate = (0..c.len()).filter(|&j| !taken[j]).collect();
    out
}

/// Same op (namespace and overload aside), phase, io, index and shape.
fn same_slot(a: &Record, b: &Record) -> bool {
    a.phase == b.phase
        && a.io == b.io
        && a.index == b.index
        && a.shape == b.shape
        && op_name(&a.op) == op_name(&b.op)
}

/// `aten::convolution` / `Functional.conv2d` → `convolution` / `conv2d`.
fn op_name(op: &str) -> String {
    let op = op.rsplit("::").next().unwrap_or(op);
    let op = op.rsplit('.').next().unwrap_or(op);
    op.to_ascii_lowercase()
}
