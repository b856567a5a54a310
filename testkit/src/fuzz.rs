//! Corpus-driven fuzzing inside `cargo test` (issue #28: a fuzz target per parser a user feeds,
//! bounded in time, its corpus kept in the repository): inputs are seeds from a corpus
//! directory mutated by proptest — bytes flipped, inserted, deleted, ranges cut out, duplicated
//! or spliced from another seed — so the cases stay near real inputs and reach deep parser
//! states. A target asserts the parser returns (Ok or a clear Err) on every case: no panic, no
//! hang (each case runs under a deadline).

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;

/// Cases per target: bounded so `make test` stays short (a few seconds a target).
pub const CASES: u32 = 2000;

/// The corpus: every file of `dir` (sorted by name), at least one.
pub fn corpus(dir: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("fuzz corpus {}: {e}", dir.display()))
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect();
    files.sort();
    let seeds: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(!seeds.is_empty(), "fuzz corpus {} is empty", dir.display());
    seeds
}

#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Duplicate(usize, usize),
    Splice(usize, usize, usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let at = any::<usize>();
    prop_oneof![
        (at, any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        (at, proptest::collection::vec(any::<u8>(), 1..12)).prop_map(|(i, v)| Edit::Insert(i, v)),
        (at, 1usize..64).prop_map(|(i, n)| Edit::Delete(i, n)),
        (at, 1usize..64).prop_map(|(i, n)| Edit::Duplicate(i, n)),
        (at, any::<usize>(), 1usize..128).prop_map(|(i, j, n)| Edit::Splice(i, j, n)),
        at.prop_map(Edit::Truncate),
    ]
}

fn apply(mut data: Vec<u8>, edits: &[Edit], other: &[u8]) -> Vec<u8> {
    for e in edits {
        let len = data.len();
        let pos = |i: usize| if len == 0 { 0 } else { i % (len + 1) };
        match e {
            Edit::Flip(i, b) if len > 0 => data[i % len] ^= b | 1,
            Edit::Flip(..) => {}
            Edit::Insert(i, v) => {
                let p = pos(*i);
                data.splice(p..p, v.iter().copied());
            }
            Edit::Delete(i, n) => {
                let p = pos(*i);
                let end = (p + n).min(len);
                data.drain(p..end);
            }
            Edit::Duplicate(i, n) => {
                let p = pos(*i);
                let end = (p + n).min(len);
                let piece = data[p..end].to_vec();
                data.splice(end..end, piece);
            }
            Edit::Splice(i, j, n) if !other.is_empty() => {
                let p = pos(*i);
                let from = j % other.len();
                let to = (from + n).min(other.len());
                data.splice(p..p, other[from..to].iter().copied());
            }
            Edit::Splice(..) => {}
            Edit::Truncate(i) => data.truncate(pos(*i)),
        }
    }
    data
}

/// Inputs: a corpus seed, unchanged or with up to 8 edits (one may splice in another seed).
pub fn mutated(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let n = seeds.len();
    (0..n, 0..n, proptest::collection::vec(edit(), 0..8))
        .prop_map(move |(a, b, edits)| apply(seeds[a].clone(), &edits, &seeds[b]))
}

/// Runs `target` on `input` in a thread, failing the case if it panics or takes longer than
/// `limit` (a hang: the thread is left behind, the test fails).
pub fn within(limit: Duration, input: Vec<u8>, target: fn(&[u8])) {
    let (tx, rx) = mpsc::channel();
    let shown = String::from_utf8_lossy(&input[..input.len().min(400)]).into_owned();
    std::thread::spawn(move || {
        let ok = std::panic::catch_unwind(|| target(&input)).is_ok();
        let _ = tx.send(ok);
    });
    match rx.recv_timeout(limit) {
        Ok(true) => {}
        Ok(false) => panic!("the parser panicked on: {shown:?}"),
        Err(_) => panic!("the parser did not return within {limit:?} on: {shown:?}"),
    }
}
