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

/// How a log numbers its training steps, for pairing logs of different writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Numbering {
    /// Every step has an epoch and an iteration (`Epoch: 0 Iteration: 5`, tcap_dllogger's
    /// `"step": [0, 5]`); `restarts` when the iterations go back in log order (they count
    /// within each epoch, or the run was resumed): then the iteration alone is no step number.
    Epochs { restarts: bool, first: u64 },
    /// Every step has an iteration and none an epoch (a CSV's `step` column, `step 5 loss …`).
    StepsOnly { first: u64 },
    /// Unnumbered steps, evaluation steps, or a mix: left as they are.
    Other,
}

fn numbering(s: &Steps) -> Numbering {
    let (mut with_epoch, mut restarts, mut first, mut prev) = (None, false, u64::MAX, None);
    for key in s.keys().iter() {
        let (Some(i), None) = (key.iteration(), key.val_iteration()) else {
            return Numbering::Other;
        };
        let e = key.epoch().is_some();
        if *with_epoch.get_or_insert(e) != e {
            return Numbering::Other;
        }
        restarts |= prev.is_some_and(|p| i < p);
        prev = Some(i);
        first = first.min(i);
    }
    match with_epoch {
        Some(true) => Numbering::Epochs { restarts, first },
        Some(false) => Numbering::StepsOnly { first },
        None => Numbering::Other,
    }
}

/// What [`match_numbering`] did, for the output and for a noise run read like the baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Renumbered {
    /// In words, among the comparison's warnings.
    pub note: String,
    /// The baseline's epochs were set aside (a noise run of its shape is numbered the same).
    pub baseline_epochs_dropped: bool,
}

/// Make key pairing work across the two ways logs number a step: one log by (epoch,
/// iteration) — tcap_dllogger's `Epoch: 0 Iteration: n` lines and `"step": [0, n]` JSON — and
/// the other by the step alone — a CSV's `step` column, `step n` console lines. Both name the
/// same training step when the first log's iterations count across epochs (they never go back
/// in log order; a single epoch always does): then its epochs are set aside and steps pair by
/// number. When one log counts from 0 and the other from 1 (tcap_dllogger's `Iteration: 0` is
/// the first step, as `enumerate` gives it; the ModelZoo's NLP CSVs write `1,…` for theirs,
/// a step counter incremented before it is logged), the first steps are the same step, so the
/// candidate is numbered as the baseline counts. Logs numbered the same way are left alone,
/// and so is a log whose iterations restart each epoch (no step number can be read from it:
/// `--align order` pairs by position). Returns what was done.
pub(super) fn match_numbering(b: &mut Steps, c: &mut Steps) -> Option<Renumbered> {
    let (nb, nc) = (numbering(b), numbering(c));
    let (b_epochs, fb, fc) = match (nb, nc) {
        (
            Numbering::Epochs {
                restarts: false,
                first,
            },
            Numbering::StepsOnly { first: fc },
        ) => (true, first, fc),
        (
            Numbering::StepsOnly { first },
            Numbering::Epochs {
                restarts: false,
                first: fc,
            },
        ) => (false, first, fc),
        _ => return None,
    };
    let shift = match (fb, fc) {
        (0, 1) => -1,
        (1, 0) => 1,
        _ => 0,
    };
    b.renumber(b_epochs, 0);
    c.renumber(!b_epochs, shift);
    let (epochs, steps) = if b_epochs {
        ("baseline", "candidate")
    } else {
        ("candidate", "baseline")
    };
    let mut note = format!(
        "the {epochs} numbers its steps by epoch and iteration, the {steps} by step alone: the {epochs}'s iterations count across its epochs, so steps are paired by that number"
    );
    if shift != 0 {
        note.push_str(&format!(
            "; the baseline counts from {fb} and the candidate from {fc}, so the candidate's step {fc} is paired with the baseline's {fb} (each log's first step with the other's)"
        ));
    }
    Some(Renumbered {
        note,
        baseline_epochs_dropped: b_epochs,
    })
}

/// A noise run read like the baseline is numbered as the baseline was.
pub(super) fn renumber_like_baseline(noise: &mut Steps, done: Option<&Renumbered>) {
    if done.is_some_and(|d| d.baseline_epochs_dropped)
        && matches!(
            numbering(noise),
            Numbering::Epochs {
                restarts: false,
                ..
            }
        )
    {
        noise.renumber(true, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(keys: &[(Option<u64>, u64)]) -> Steps {
        let mut s = Steps::new();
        for (k, &(e, i)) in keys.iter().enumerate() {
            s.push(e, Some(i), None, 1.0 + k as f64);
        }
        s
    }

    fn iterations(s: &Steps) -> Vec<(Option<u64>, Option<u64>)> {
        s.keys()
            .iter()
            .map(|k| (k.epoch(), k.iteration()))
            .collect()
    }

    #[test]
    fn epoch_and_step_numbering_pair_by_the_step() {
        // tcap's `Epoch: 0 Iteration: 0..3` against a CSV's steps 1..4: the same four steps.
        let mut b = steps(&[(Some(0), 0), (Some(0), 1), (Some(0), 2), (Some(0), 3)]);
        let mut c = steps(&[(None, 1), (None, 2), (None, 3), (None, 4)]);
        let done = match_numbering(&mut b, &mut c).expect("renumbered");
        assert!(done.baseline_epochs_dropped);
        assert!(
            done.note.contains("counts from 0 and the candidate from 1"),
            "{}",
            done.note
        );
        let (pairs, only_b, only_c) = pair_by_key(&b, &c);
        assert_eq!((pairs.len(), only_b.count, only_c.count), (4, 0, 0));
        // The first value of each log is paired with the other's first.
        assert_eq!(pairs.get(0).baseline, 1.0);
        assert_eq!(pairs.get(0).candidate, 1.0);
        assert_eq!(iterations(&b)[0], (None, Some(0)));

        // The other way round: the baseline is the CSV, and keeps its own numbers.
        let mut b = steps(&[(None, 1), (None, 2)]);
        let mut c = steps(&[(Some(0), 0), (Some(0), 1)]);
        let done = match_numbering(&mut b, &mut c).expect("renumbered");
        assert!(!done.baseline_epochs_dropped);
        assert_eq!(iterations(&b), [(None, Some(1)), (None, Some(2))]);
        assert_eq!(iterations(&c), [(None, Some(1)), (None, Some(2))]);

        // Iterations that count across epochs are step numbers; the same base is not shifted.
        let mut b = steps(&[(Some(0), 10), (Some(1), 20), (Some(1), 30)]);
        let mut c = steps(&[(None, 10), (None, 20), (None, 30)]);
        let done = match_numbering(&mut b, &mut c).expect("renumbered");
        assert!(!done.note.contains("counts from"), "{}", done.note);
        assert_eq!(pair_by_key(&b, &c).0.len(), 3);
    }

    #[test]
    fn logs_numbered_alike_or_per_epoch_are_left_alone() {
        // Both by epoch and iteration, or both by step: key pairing as it always was.
        let mut b = steps(&[(Some(0), 0), (Some(0), 1)]);
        let mut c = steps(&[(Some(0), 1), (Some(0), 2)]);
        assert_eq!(match_numbering(&mut b, &mut c), None);
        assert_eq!(iterations(&c), [(Some(0), Some(1)), (Some(0), Some(2))]);
        let mut b = steps(&[(None, 0), (None, 1)]);
        let mut c = steps(&[(None, 1), (None, 2)]);
        assert_eq!(match_numbering(&mut b, &mut c), None);
        // Iterations that restart each epoch name no step of a step-numbered log.
        let mut b = steps(&[(Some(0), 0), (Some(0), 1), (Some(1), 0), (Some(1), 1)]);
        let mut c = steps(&[(None, 1), (None, 2), (None, 3), (None, 4)]);
        assert_eq!(match_numbering(&mut b, &mut c), None);
        assert_eq!(iterations(&b)[2], (Some(1), Some(0)));
        // Unnumbered console lines are not step numbers either.
        let mut b = steps(&[(Some(0), 0)]);
        let mut c = Steps::new();
        c.push(None, None, None, 1.0);
        assert_eq!(match_numbering(&mut b, &mut c), None);
    }
}
