//! Data-parallel run_bert on Gloo, and gradient accumulation: two workers with batch 4 (or one
//! with batch 4 accumulating two micro-batches) follow, step for step, the loss curve of one
//! process with batch 8 (dropout off; the masked positions derive from the sample's stream
//! position, so all read and mask the same 8 sequences per step).
//! One masked token per sequence (`--max_predictions_per_seq 1`): each rank averages the
//! masked-LM loss over its own masked tokens (as NVIDIA's and Hugging Face's DDP do), which
//! equals the one-process mean only when every sequence has as many (with 9-10 per sequence
//! the curves drift apart by up to 1e-3 relative through LAMB, by design, not a bug).
//!
//! Tolerance: relative 1e-5 per logged loss. The runs differ only in fp32 summation order
//! (two half-batch means averaged vs one mean, the gradient allreduce), about one ulp per
//! reduction, which LAMB carries forward over 6 steps; reading or masking other samples (a
//! sharding bug) changes the loss by 1e-2 or more.

use std::path::Path;
use std::process::Command;

use modelzoo_testkit::{assert_losses_follow, free_port, train_losses};

const BIN: &str = env!("CARGO_BIN_EXE_run_bert");

/// Rank 0's logged `train.loss` per step.
fn losses(out: &Path, extra: &[&str]) -> Vec<f64> {
    train_losses(
        Command::new(BIN)
            .args([
                "--model_name",
                "bert_tiny",
                "--step",
                "6",
                "--logging_freq",
                "1",
            ])
            .args(["--max_seq_length", "64", "--dropout", "0", "--lr", "0.01"])
            .args(["--max_predictions_per_seq", "1"])
            .args(["-o", "Engine.eval_iters=1"])
            .args(["--output_dir", &out.display().to_string()])
            .args(extra),
    )
}

#[test]
fn two_workers_match_one_worker_with_twice_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let one = losses(&dir.path().join("one"), &["--batch_size", "8"]);
    let port = free_port().to_string();
    let two = losses(
        &dir.path().join("two"),
        &[
            "--batch_size",
            "4",
            "--nproc_per_node",
            "2",
            "--master_port",
            &port,
        ],
    );
    assert_losses_follow(&one, &two, 6, 1e-5, ["1 worker", "2 workers"]);
    let meta = dir.path().join("two/checkpoints/bert_config.json");
    assert!(meta.is_file(), "{} missing", meta.display());
}

/// Gradient accumulation: batch 4 with `Engine.accumulate_steps=2` reads, per optimizer step,
/// the 8 sequences batch 8 reads and follows its loss curve (same tolerance and reasons).
#[test]
fn accumulating_two_micro_batches_matches_one_batch_of_twice_the_size() {
    let dir = tempfile::tempdir().unwrap();
    let one = losses(&dir.path().join("one"), &["--batch_size", "8"]);
    let acc = losses(
        &dir.path().join("acc"),
        &["--batch_size", "4", "-o", "Engine.accumulate_steps=2"],
    );
    assert_losses_follow(&one, &acc, 6, 1e-5, ["batch 8", "2 x 4 accumulated"]);
    assert!(
        one.iter().any(|l| (l - one[0]).abs() > 1e-3),
        "it trains: {one:?}"
    );
}
