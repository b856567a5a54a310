//! Data-parallel run_vit: two worker processes on the CPU (Gloo) through the launcher
//! (`--nproc_per_node 2`), ending with bit-identical parameters on both ranks.

mod common;

use common::{log_of, series, small, with, BIN};
use modelzoo_testkit::free_port;
use std::process::Command;

/// rank → parameters fingerprint, from the workers' end-of-run lines.
fn fingerprints(text: &str) -> Vec<(usize, String)> {
    let mut v: Vec<(usize, String)> = text
        .lines()
        .filter_map(|l| {
            let rest = &l[l.find("rank ")? + 5..];
            let (rank, rest) = rest.split_once(": parameters fingerprint ")?;
            Some((
                rank.parse().ok()?,
                rest.split_whitespace().next()?.to_string(),
            ))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn two_workers_train_in_lockstep_and_end_bit_identical() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    let args = with(
        small(dir.path()),
        &[
            "--batch_size",
            "8",
            "--synthetic_samples",
            "64",
            "--step",
            "6",
            "--epoch",
            "100",
            "--logging_freq",
            "1",
            "--master_port",
            &port,
            "--nproc_per_node",
            "2",
        ],
    );
    // One intra-op thread per process: both ranks share this small machine.
    let o = Command::new(BIN)
        .args(&args)
        .env("RUST_LOG", "info")
        .env("OMP_NUM_THREADS", "1")
        .env_remove("WORLD_SIZE")
        .env_remove("RANK")
        .env_remove("LOCAL_RANK")
        .output()
        .expect("run_vit starts");
    let text = common::text(&o);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("global batch 16 = batch 8 x world size 2"),
        "{text}"
    );
    let fp = fingerprints(&text);
    assert_eq!(fp.len(), 2, "one fingerprint per rank\n{text}");
    assert_eq!(fp[0].1, fp[1].1, "ranks disagree: {fp:?}\n{text}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    for rank in 0..2 {
        assert!(
            stdout.contains(&format!("Iteration: 6  rank : {rank}  train.loss")),
            "rank {rank} logs its steps\n{text}"
        );
    }
    let losses = series(&log_of(dir.path(), "vit_tiny"), "train.loss");
    assert!(losses.iter().all(|(_, l)| l.is_finite()), "{losses:?}");
    assert_eq!(losses.last().map(|l| l.0), Some(6), "{losses:?}");
}
