//! Pairing the baseline's steps with the candidate's: by (epoch, iteration) occurrence or by
//! position, with the steps only one log has listed as ranges.

use super::{Key, KeyRange, Pair, Point};

/// Steps of one log left unpaired: (position in that log's series, key).
pub(super) type Unpaired = Vec<(usize, Key)>;

/// Position pairing: the first min(n, m) values of each.
pub(super) fn pair_by_order(b: &[Point], c: &[Point]) -> (Vec<Pair>, Unpaired, Unpaired) {
    let n = b.len().min(c.len());
    let pairs = b[..n]
        .iter()
        .zip(&c[..n])
        .map(|(b, c)| Pair {
            key: b.key,
            baseline: b.value,
            candidate: c.value,
        })
        .collect();
    let only_b = (n..b.len()).map(|i| (i, b[i].key)).collect();
    let only_c = (n..c.len()).map(|j| (j, c[j].key)).collect();
    (pairs, only_b, only_c)
}

/// Key pairing: number repeated keys by occurrence (in log order), sort, merge-join.
pub(super) fn pair_by_key(b: &mut [Point], c: &mut [Point]) -> (Vec<Pair>, Unpaired, Unpaired) {
    number_occurrences(b);
    number_occurrences(c);
    let mut pairs = Vec::with_capacity(b.len().min(c.len()));
    let (mut only_b, mut only_c) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < b.len() && j < c.len() {
        match b[i].key.cmp(&c[j].key) {
            std::cmp::Ordering::Less => {
                only_b.push((i, b[i].key));
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                only_c.push((j, c[j].key));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                pairs.push(Pair {
                    key: b[i].key,
                    baseline: b[i].value,
                    candidate: c[j].value,
                });
                i += 1;
                j += 1;
            }
        }
    }
    only_b.extend((i..b.len()).map(|i| (i, b[i].key)));
    only_c.extend((j..c.len()).map(|j| (j, c[j].key)));
    (pairs, only_b, only_c)
}

/// Give the n-th repeat of a key (in log order) occurrence n, then sort by key. A stable sort
/// keeps repeats in log order, so occurrence numbers follow from adjacent equal triples.
pub(super) fn number_occurrences(points: &mut [Point]) {
    points.sort_by_key(|p| p.key.parts);
    for i in 1..points.len() {
        if points[i].key.parts == points[i - 1].key.parts {
            points[i].key.occurrence = points[i - 1].key.occurrence.saturating_add(1);
        }
    }
}

/// Compress unpaired steps into runs: steps next to each other in their log's series with no
/// paired step between them form one range (across epoch boundaries too).
pub(super) fn ranges(unpaired: &[(usize, Key)]) -> Vec<KeyRange> {
    let mut out: Vec<KeyRange> = Vec::new();
    let mut prev = None;
    for &(pos, k) in unpaired {
        match out.last_mut() {
            Some(last) if prev == Some(pos.wrapping_sub(1)) => {
                last.last = k;
                last.count += 1;
            }
            _ => out.push(KeyRange {
                first: k,
                last: k,
                count: 1,
            }),
        }
        prev = Some(pos);
    }
    out
}
