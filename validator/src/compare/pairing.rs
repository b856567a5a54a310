//! Pairing the baseline's steps with the candidate's: by (epoch, iteration) occurrence or by
//! position. Both stream: the pairs are built as the two series are walked, and the steps only
//! one log has are counted and compressed into ranges on the way (no per-step list is kept).

use super::steps::{Pairs, Steps};
use super::{Key, KeyRange};

/// The steps of one log left unpaired: how many, and their runs.
#[derive(Debug, Clone, Default)]
pub(super) struct Unpaired {
    pub count: usize,
    pub ranges: Vec<KeyRange>,
    /// Position (in that log's key order) of the last unpaired step, for joining runs.
    last: Option<usize>,
}

impl Unpaired {
    /// Steps next to each other in their log's series with no paired step between them form
    /// one range (across epoch boundaries too).
    fn push(&mut self, pos: usize, key: Key) {
        self.count += 1;
        match self.ranges.last_mut() {
            Some(last) if self.last == Some(pos.wrapping_sub(1)) => {
                last.last = key;
                last.count += 1;
            }
            _ => self.ranges.push(KeyRange {
                first: key,
                last: key,
                count: 1,
            }),
        }
        self.last = Some(pos);
    }
}

/// Position pairing: the first min(n, m) values of each, keyed by the baseline's keys.
pub(super) fn pair_by_order(b: &Steps, c: &Steps) -> (Pairs, Unpaired, Unpaired) {
    let n = b.len().min(c.len());
    let mut pairs = Pairs::with_capacity(n);
    let mut only_b = Unpaired::default();
    let mut only_c = Unpaired::default();
    for (i, key) in b.keys().iter().enumerate() {
        if i < n {
            pairs.push(key, b.values()[i], c.values()[i]);
        } else {
            only_b.push(i, key);
        }
    }
    for (j, key) in c.keys().iter().enumerate().skip(n) {
        only_c.push(j, key);
    }
    (pairs, only_b, only_c)
}

/// Key pairing: each log in key order with repeated keys numbered by occurrence (in log
/// order), merge-joined.
pub(super) fn pair_by_key(b: &Steps, c: &Steps) -> (Pairs, Unpaired, Unpaired) {
    let mut pairs = Pairs::with_capacity(b.len().min(c.len()));
    let mut only_b = Unpaired::default();
    let mut only_c = Unpaired::default();
    let mut bi = b.keyed().enumerate();
    let mut ci = c.keyed().enumerate();
    let (mut nb, mut nc) = (bi.next(), ci.next());
    loop {
        match (nb, nc) {
            (Some((i, pb)), Some((j, pc))) => match pb.key.cmp(&pc.key) {
                std::cmp::Ordering::Less => {
                    only_b.push(i, pb.key);
                    nb = bi.next();
                }
                std::cmp::Ordering::Greater => {
                    only_c.push(j, pc.key);
                    nc = ci.next();
                }
                std::cmp::Ordering::Equal => {
                    pairs.push(pb.key, pb.value, pc.value);
                    nb = bi.next();
                    nc = ci.next();
                }
            },
            (Some((i, pb)), None) => {
                only_b.push(i, pb.key);
                nb = bi.next();
            }
            (None, Some((j, pc))) => {
                only_c.push(j, pc.key);
                nc = ci.next();
            }
            (None, None) => break,
        }
    }
    (pairs, only_b, only_c)
}
