//! Where compare's memory goes, kept small: a metric's series is its values (8 bytes each)
//! plus its keys as runs of arithmetic progressions ([`KeySeq`]) — a log numbered `epoch 0
//! iteration 0, 1, 2, …` (or every 10th iteration, or unnumbered) is a handful of runs however
//! long it is. Only a log whose steps go back (a resumed run logging steps again) is sorted in
//! a temporary copy of 40 bytes per value ([`Steps::keyed`]).

use super::{Key, Pair, Point, NONE};

/// One run of keys: `first`, then `len - 1` more, each `it_step` iterations and `occ_step`
/// occurrences after the one before; epoch and validation iteration stay those of `first`.
#[derive(Debug, Clone, Copy)]
struct Run {
    first: Key,
    it_step: u64,
    occ_step: u32,
    len: usize,
    /// Index of `first` in the whole sequence.
    start: usize,
}

impl Run {
    /// The k-th key of the run (k may be `len`: the key that would extend it).
    fn at(&self, k: usize) -> Option<Key> {
        let mut key = self.first;
        if self.first.parts[1] != NONE {
            let it = self
                .it_step
                .checked_mul(k as u64)
                .and_then(|d| self.first.parts[1].checked_add(d))
                .filter(|&it| it != NONE)?;
            key.parts[1] = it;
        }
        key.occurrence = u32::try_from(k)
            .ok()
            .and_then(|k| self.occ_step.checked_mul(k))
            .and_then(|d| self.first.occurrence.checked_add(d))?;
        Some(key)
    }
}

/// A sequence of keys, stored as runs.
#[derive(Debug, Clone, Default)]
pub struct KeySeq {
    runs: Vec<Run>,
    len: usize,
}

impl KeySeq {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Runs stored (for the memory tests: a log in step order keeps a few).
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    pub fn push(&mut self, key: Key) {
        let index = self.len;
        self.len += 1;
        if let Some(run) = self.runs.last_mut() {
            if run.len == 1 {
                let f = run.first;
                let same_place = f.parts[0] == key.parts[0] && f.parts[2] == key.parts[2];
                let iterations = match (f.parts[1], key.parts[1]) {
                    (NONE, NONE) => Some(0),
                    (a, b) if a != NONE && b != NONE && b >= a => Some(b - a),
                    _ => None,
                };
                if let (true, Some(it_step), true) =
                    (same_place, iterations, key.occurrence >= f.occurrence)
                {
                    run.it_step = it_step;
                    run.occ_step = key.occurrence - f.occurrence;
                    run.len = 2;
                    return;
                }
            } else if run.at(run.len) == Some(key) {
                run.len += 1;
                return;
            }
        }
        self.runs.push(Run {
            first: key,
            it_step: 0,
            occ_step: 0,
            len: 1,
            start: index,
        });
    }

    /// The i-th key (i < len).
    pub fn get(&self, i: usize) -> Key {
        let r = self.runs.partition_point(|r| r.start + r.len <= i);
        let run = &self.runs[r];
        run.at(i - run.start).unwrap_or(run.first)
    }

    /// The keys in order.
    pub fn iter(&self) -> impl Iterator<Item = Key> + '_ {
        self.runs
            .iter()
            .flat_map(|r| (0..r.len).map(move |k| r.at(k).unwrap_or(r.first)))
    }
}

/// One metric's values in log order, with their (epoch, iteration, validation iteration).
#[derive(Debug, Clone, Default)]
pub struct Steps {
    keys: KeySeq,
    values: Vec<f64>,
    /// Whether the keys never go back (then pairing streams them; else a sorted copy).
    in_order: bool,
    last: Option<[u64; 3]>,
}

impl Steps {
    pub fn new() -> Steps {
        Steps {
            in_order: true,
            ..Steps::default()
        }
    }

    pub fn push(&mut self, epoch: Option<u64>, iteration: Option<u64>, val: Option<u64>, v: f64) {
        self.push_key(Key::new(epoch, iteration, val));
        self.values.push(v);
    }

    fn push_key(&mut self, key: Key) {
        if self.last.is_some_and(|last| last > key.parts) {
            self.in_order = false;
        }
        self.last = Some(key.parts);
        self.keys.push(key);
    }

    /// Number the steps again: without their epochs (`drop_epoch`) and with `shift` added to
    /// every iteration; the values stay where they are (only the runs of keys are rebuilt).
    pub(super) fn renumber(&mut self, drop_epoch: bool, shift: i64) {
        let old = std::mem::take(&mut self.keys);
        (self.in_order, self.last) = (true, None);
        for key in old.iter() {
            self.push_key(Key::new(
                key.epoch().filter(|_| !drop_epoch),
                key.iteration().map(|i| i.saturating_add_signed(shift)),
                key.val_iteration(),
            ));
        }
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Values in log order.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The key of the i-th value in log order (occurrence not numbered).
    pub fn key(&self, i: usize) -> Key {
        self.keys.get(i)
    }

    /// Keys in log order (occurrences not numbered): what position pairing uses.
    pub fn keys(&self) -> &KeySeq {
        &self.keys
    }

    /// Whether the keys never go back.
    pub fn in_order(&self) -> bool {
        self.in_order
    }

    /// The smallest key (for messages).
    pub fn min_key(&self) -> Option<Key> {
        if self.in_order {
            self.keys.iter().next()
        } else {
            self.keys.iter().min()
        }
    }

    /// Release the memory (the comparison keeps only its pairs).
    pub fn clear(&mut self) {
        *self = Steps::new();
    }

    /// The points sorted by key, repeats of a key numbered by occurrence in log order: streamed
    /// from the runs when the log is in order, else from a sorted copy (40 bytes per value).
    pub fn keyed(&self) -> Keyed<'_> {
        if self.in_order {
            Keyed::InOrder {
                keys: Box::new(self.keys.iter()),
                values: self.values.iter(),
                prev: None,
            }
        } else {
            let mut points: Vec<Point> = self
                .keys
                .iter()
                .zip(&self.values)
                .map(|(key, &value)| Point { key, value })
                .collect();
            // Stable: repeats keep log order, so occurrences follow from adjacent equal keys.
            points.sort_by_key(|p| p.key.parts);
            for i in 1..points.len() {
                if points[i].key.parts == points[i - 1].key.parts {
                    points[i].key.occurrence = points[i - 1].key.occurrence.saturating_add(1);
                }
            }
            Keyed::Sorted(points.into_iter())
        }
    }
}

/// Points in key order with occurrences numbered.
pub enum Keyed<'a> {
    InOrder {
        keys: Box<dyn Iterator<Item = Key> + 'a>,
        values: std::slice::Iter<'a, f64>,
        prev: Option<Key>,
    },
    Sorted(std::vec::IntoIter<Point>),
}

impl Iterator for Keyed<'_> {
    type Item = Point;
    fn next(&mut self) -> Option<Point> {
        match self {
            Keyed::InOrder { keys, values, prev } => {
                let mut key = keys.next()?;
                let value = *values.next()?;
                if let Some(p) = prev {
                    if p.parts == key.parts {
                        key.occurrence = p.occurrence.saturating_add(1);
                    }
                }
                *prev = Some(key);
                Some(Point { key, value })
            }
            Keyed::Sorted(it) => it.next(),
        }
    }
}

/// The paired steps: their keys (runs) and both values, 16 bytes a pair.
#[derive(Debug, Clone, Default)]
pub struct Pairs {
    keys: KeySeq,
    baseline: Vec<f64>,
    candidate: Vec<f64>,
}

impl Pairs {
    pub fn with_capacity(n: usize) -> Pairs {
        Pairs {
            keys: KeySeq::default(),
            baseline: Vec::with_capacity(n),
            candidate: Vec::with_capacity(n),
        }
    }

    pub fn push(&mut self, key: Key, baseline: f64, candidate: f64) {
        self.keys.push(key);
        self.baseline.push(baseline);
        self.candidate.push(candidate);
    }

    pub fn len(&self) -> usize {
        self.baseline.len()
    }

    pub fn is_empty(&self) -> bool {
        self.baseline.is_empty()
    }

    /// The i-th pair (i < len).
    pub fn get(&self, i: usize) -> Pair {
        Pair {
            key: self.keys.get(i),
            baseline: self.baseline[i],
            candidate: self.candidate[i],
        }
    }

    pub fn baseline(&self) -> &[f64] {
        &self.baseline
    }

    pub fn candidate(&self) -> &[f64] {
        &self.candidate
    }

    /// The pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = Pair> + '_ {
        self.keys
            .iter()
            .zip(self.baseline.iter().zip(&self.candidate))
            .map(|(key, (&baseline, &candidate))| Pair {
                key,
                baseline,
                candidate,
            })
    }

    /// Built from pairs (tests and tools that have them at hand).
    pub fn from_pairs(pairs: impl IntoIterator<Item = Pair>) -> Pairs {
        let mut out = Pairs::default();
        for p in pairs {
            out.push(p.key, p.baseline, p.candidate);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(e: Option<u64>, i: Option<u64>, occ: u32) -> Key {
        let mut key = Key::new(e, i, None);
        key.occurrence = occ;
        key
    }

    #[test]
    fn runs_compress_progressions_and_give_every_key_back() {
        let mut keys = Vec::new();
        for e in 0..3 {
            for i in (0..500).step_by(10) {
                keys.push(k(Some(e), Some(i), 0));
            }
        }
        keys.extend((0..7).map(|o| k(None, None, o)));
        keys.push(k(Some(9), Some(u64::MAX - 1), 0));
        keys.push(k(Some(9), Some(3), 0)); // going back: a new run
        keys.push(k(Some(9), Some(3), 0)); // a repeat: stride 0
        let mut seq = KeySeq::default();
        for &key in &keys {
            seq.push(key);
        }
        assert_eq!(seq.len(), keys.len());
        assert!(seq.runs() <= 7, "{}", seq.runs());
        assert_eq!(seq.iter().collect::<Vec<_>>(), keys);
        for (i, &key) in keys.iter().enumerate() {
            assert_eq!(seq.get(i), key, "{i}");
        }
    }

    #[test]
    fn a_log_that_goes_back_is_sorted_and_numbered() {
        let mut s = Steps::new();
        for (i, v) in [(0, 1.0), (1, 2.0), (2, 3.0), (1, 4.0), (2, 5.0), (3, 6.0)] {
            s.push(Some(0), Some(i), None, v);
        }
        assert!(!s.in_order());
        let got: Vec<(u64, u32, f64)> = s
            .keyed()
            .map(|p| (p.key.iteration().unwrap(), p.key.occurrence, p.value))
            .collect();
        assert_eq!(
            got,
            [
                (0, 0, 1.0),
                (1, 0, 2.0),
                (1, 1, 4.0),
                (2, 0, 3.0),
                (2, 1, 5.0),
                (3, 0, 6.0)
            ]
        );
        let mut t = Steps::new();
        for v in [1.0, 2.0, 3.0] {
            t.push(None, None, None, v);
        }
        assert!(t.in_order());
        let occ: Vec<u32> = t.keyed().map(|p| p.key.occurrence).collect();
        assert_eq!(occ, [0, 1, 2]);
    }
}
