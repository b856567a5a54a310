//! Issue #28: one file of N lines took 1.4 s at 15k lines, 5.3 s at 30k, 92 s at 120k —
//! quadratic. This checks growth without timing anything: [`migrate::meter`] counts the work
//! of the loops that can grow with the file (the lexer, the diff — including the comparisons
//! of the searching fallback —, the apex checks' block structure and name scans, the record's
//! line lookups), and four times the lines must cost about four times the steps, not sixteen.
//!
//! What it does not see: a loop that is not metered. Swapping the diff in `tree.rs` for a
//! plain `similar::TextDiff` would bypass the meter; `scripts/bench/migrate_size_bench.sh`
//! times the real binary for that.

use std::path::Path;

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cuda_model")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// apex amp in a shape the conversion refuses (the scaled loss is used after its block), so
/// every amp line is reported one by one.
const REFUSED_APEX: &str = "\
import torch
from apex import amp


def step(model, opt, loss):
    model.cuda()
    model, opt = amp.initialize(model, opt)
    with amp.scale_loss(loss, opt) as scaled_loss:
        scaled_loss.backward()
    print(scaled_loss)
    opt.step()
";

/// The steps of a dry run, a `--write`, and a dry run after a person deleted every line of
/// `handled` (so the record looks for findings that are gone), on one file made of `copies`
/// copies of `unit`.
fn steps(unit: &str, copies: usize, handled: &str) -> u64 {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("big.py");
    std::fs::write(&file, unit.repeat(copies)).unwrap();
    // One file: the scan migrates it on this thread, where the meter counts.
    migrate::meter::reset();
    let report = migrate::scan(tmp.path()).unwrap();
    assert_eq!(report.files_scanned, 1);
    assert!(!migrate::render_diff(&report).is_empty());
    migrate::write(&report).unwrap();
    let written = std::fs::read_to_string(&file).unwrap();
    let edited: String = written
        .split_inclusive('\n')
        .filter(|l| !l.contains(handled))
        .collect();
    std::fs::write(&file, edited).unwrap();
    let again = migrate::scan(tmp.path()).unwrap();
    assert!(!again.findings.is_empty());
    migrate::meter::steps()
}

fn assert_linear(name: &str, unit: &str, handled: &str) {
    let small = steps(unit, 40, handled);
    let large = steps(unit, 160, handled);
    let ratio = large as f64 / small as f64;
    // Linear: 4 (a little more for fixed costs shrinking in share); quadratic: 16.
    assert!(
        ratio < 5.0,
        "{name}: 4× the lines cost {ratio:.1}× the steps ({small} → {large}): quadratic again?"
    );
}

#[test]
fn rewrites_all_through_a_file_cost_linear_work() {
    assert_linear("train.py ×N", &data("train.py"), "cudnn.benchmark");
}

#[test]
fn converted_apex_amp_all_through_a_file_costs_linear_work() {
    assert_linear(
        "train_apex.py ×N",
        &data("train_apex.py"),
        "delay_allreduce",
    );
}

#[test]
fn refused_apex_amp_all_through_a_file_costs_linear_work() {
    assert_linear("refused apex ×N", REFUSED_APEX, "print(scaled_loss)");
}
