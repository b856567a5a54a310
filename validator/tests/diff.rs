//! `validator::diff` on real dump directories written into temp dirs: metrics against
//! hand-computed values, the verdict rules, pairing, the fp64 arbitration and the report files.

mod diff_support;

use std::fs;
use std::path::{Path, PathBuf};

use diff_support::{close, dump, meta, opts, t};
use serde_json::{json, Value};
use validator::diff::metrics::Status;
use validator::diff::{self, report};

#[test]
fn metrics_match_hand_computed_values() {
    let tmp = tempfile::tempdir().unwrap();
    let b = [1.0, 2.0, 3.0, 4.0];
    let c = [1.0, 2.0, 3.0, 4.1];
    let a = dump(
        &tmp.path().join("a"),
        "m",
        1,
        &[t("aten::mul", 0, "forward", "output", &b)],
    );
    let z = dump(
        &tmp.path().join("b"),
        "m",
        1,
        &[t("aten::mul", 0, "forward", "output", &c)],
    );
    let d = diff::diff(&opts(&a, &z)).unwrap();
    let m = &d.records[0].metrics;
    let (bf, cf): (Vec<f64>, Vec<f64>) = (
        b.iter().map(|x| *x as f32 as f64).collect(),
        c.iter().map(|x| *x as f32 as f64).collect(),
    );
    let dot: f64 = bf.iter().zip(&cf).map(|(x, y)| x * y).sum();
    let nb: f64 = bf.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nc: f64 = cf.iter().map(|x| x * x).sum::<f64>().sqrt();
    let diff4 = cf[3] - bf[3];
    assert!(close(m.cosine, dot / (nb * nc)), "{m:?}");
    assert!(close(m.max_abs, diff4), "{m:?}");
    assert!(close(m.max_rel, diff4 / 4.0), "{m:?}");
    assert!(close(m.rmse, (diff4 * diff4 / 4.0).sqrt()), "{m:?}");
    assert!(
        close(m.within_1e3, 0.75) && close(m.within_5e3, 0.75),
        "{m:?}"
    );
    assert_eq!(m.nan_inf_mismatch, Some(0));
    // cosine 0.99997 ≥ 0.99 and max_abs 0.1 ≤ 1: reached.
    assert_eq!(d.records[0].verdict, Status::Pass);
    assert!(d.pass && d.first().is_none());
}

#[test]
fn msprobe_rules_and_first_divergence_forward_before_backward() {
    let tmp = tempfile::tempdir().unwrap();
    let base = [1.0, -2.0, 3.0, -4.0];
    let tensors = |bwd: [f64; 4], mul1: [f64; 4], big: [f64; 4], nan: [f64; 4]| {
        vec![
            t("aten::mul", 0, "forward", "output", &base),
            t("aten::mm", 0, "backward", "output", &bwd),
            t("aten::mul", 1, "forward", "output", &mul1),
            t("aten::add", 0, "forward", "output", &big),
            t("aten::div", 0, "forward", "output", &nan),
        ]
    };
    let a = dump(
        &tmp.path().join("a"),
        "m",
        1,
        &tensors(base, base, base, base),
    );
    let c = dump(
        &tmp.path().join("c"),
        "m",
        1,
        &tensors(
            [-1.0, 2.0, -3.0, 4.0],     // cosine -1: fails, but backward
            [1.0, -2.0, 3.0, -3.9],     // cosine > 0.99 and max_abs 0.1: reached
            [1.0, -2.0, 3.0, -5.5],     // max_abs 1.5 > 1: fails (first forward failure)
            [1.0, -2.0, 3.0, f64::NAN], // NaN only in the candidate: fails
        ),
    );
    let d = diff::diff(&opts(&a, &c)).unwrap();
    let v: Vec<(String, Status)> = d
        .records
        .iter()
        .map(|r| (r.key.clone(), r.verdict))
        .collect();
    assert_eq!(
        v.iter().map(|x| x.1).collect::<Vec<_>>(),
        [
            Status::Pass,
            Status::Fail,
            Status::Pass,
            Status::Fail,
            Status::Fail
        ],
        "{v:?}"
    );
    assert_eq!(d.records[4].metrics.nan_inf_mismatch, Some(1));
    let first = d.first().unwrap();
    assert_eq!(
        (first.key.as_str(), first.op.as_str(), first.call),
        ("aten::add#0.forward.output.0", "aten::add", 0)
    );
    assert!(!d.pass);
    let summary: Value = serde_json::from_str(&report::summary_json(&d, "cmd")).unwrap();
    assert_eq!(
        summary["first_divergence"]["key"],
        "aten::add#0.forward.output.0"
    );
    assert_eq!(summary["first_divergence"]["scope"], "layer");
    for field in [
        "cosine",
        "max_abs",
        "max_rel",
        "rmse",
        "within_1e-3",
        "within_5e-3",
        "nan_inf_mismatch",
    ] {
        assert!(summary["first_divergence"].get(field).is_some(), "{field}");
        assert!(summary["records"][0].get(field).is_some(), "{field}");
    }
}

#[test]
fn pairing_falls_back_to_order_op_and_shape_and_lists_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let v = [1.0, 2.0];
    let a = dump(
        &tmp.path().join("a"),
        "m",
        1,
        &[
            t("aten::relu", 0, "forward", "output", &v),
            t("aten::mul", 0, "forward", "output", &v),
            t("aten::sum", 0, "forward", "output", &[3.0]),
        ],
    );
    // The candidate runs an extra relu first: its relu keys shift by one call; `aten::sum`
    // is missing and `aten::exp` is new.
    let c = dump(
        &tmp.path().join("c"),
        "m",
        1,
        &[
            t("aten::relu", 0, "forward", "output", &[0.0, 0.0, 0.0]),
            t("aten::relu", 1, "forward", "output", &v),
            t("aten::mul", 0, "forward", "output", &v),
            t("aten::exp", 0, "forward", "output", &[9.0]),
        ],
    );
    let d = diff::diff(&opts(&a, &c)).unwrap();
    let pairs: Vec<(&str, &str, String)> = d
        .records
        .iter()
        .map(|r| {
            (
                r.key.as_str(),
                r.candidate_key.as_str(),
                format!("{:?}", r.matched_by),
            )
        })
        .collect();
    // relu#0 pairs by key with the candidate's relu#0 (shape [3]): that differs and fails.
    assert_eq!(pairs[0].0, "aten::relu#0.forward.output.0");
    assert_eq!(d.records[0].verdict, Status::Fail);
    assert!(
        d.records[0].reason.contains("shape"),
        "{}",
        d.records[0].reason
    );
    assert_eq!(
        pairs[1],
        (
            "aten::mul#0.forward.output.0",
            "aten::mul#0.forward.output.0",
            "Key".into()
        )
    );
    assert_eq!(d.only_baseline, ["aten::sum#0.forward.output.0"]);
    assert_eq!(
        d.only_candidate,
        [
            "aten::relu#1.forward.output.0",
            "aten::exp#0.forward.output.0"
        ]
    );

    // With keys that never match (another tool's names), order + op + shape pair them.
    let e = dump(
        &tmp.path().join("e"),
        "m",
        1,
        &[
            t("Functional.relu", 0, "forward", "output", &v),
            t("Torch.mul", 7, "forward", "output", &v),
        ],
    );
    let d = diff::diff(&opts(&a, &e)).unwrap();
    assert_eq!(d.records.len(), 2);
    assert!(d
        .records
        .iter()
        .all(|r| format!("{:?}", r.matched_by) == "Order"));
    assert_eq!(d.records[1].candidate_key, "Torch.mul#7.forward.output.0");
}

/// Stats-only dumps: the same records without files, meta says `stats`.
fn stats_dump(root: &Path, model: &str, recs: &[(&str, [f64; 4])]) -> PathBuf {
    let dir = root.join("rank0/step1");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("meta.json"),
        meta(model, 1, "stats", "float32").to_string(),
    )
    .unwrap();
    let mut s = String::new();
    for (key, [min, max, mean, l2]) in recs {
        let op = key.split('#').next().unwrap();
        s.push_str(
            &json!({"key": key, "op": op, "call": 0, "phase": "forward", "io": "output",
                "index": 0, "scope": "", "dtype": "float32", "shape": [100], "min": min,
                "max": max, "mean": mean, "l2": l2, "nan": 0, "inf": 0, "checksum": null})
            .to_string(),
        );
        s.push('\n');
    }
    fs::write(dir.join("records.jsonl"), s).unwrap();
    root.to_path_buf()
}

#[test]
fn stats_only_rule_and_fp64_arbitration() {
    let tmp = tempfile::tempdir().unwrap();
    // l2 = 10 over 100 elements: RMS 1, so stat_diff is the plain difference.
    let a = stats_dump(
        &tmp.path().join("a"),
        "m",
        &[
            ("aten::a#0.forward.output.0", [-1.0, 1.0, 0.0, 10.0]),
            ("aten::b#0.forward.output.0", [-1.0, 1.0, 0.0, 10.0]),
        ],
    );
    let c = stats_dump(
        &tmp.path().join("c"),
        "m",
        &[
            ("aten::a#0.forward.output.0", [-1.0, 1.005, 0.0, 10.0]),
            ("aten::b#0.forward.output.0", [-1.0, 1.0, 0.03, 10.0]),
        ],
    );
    let d = diff::diff(&opts(&a, &c)).unwrap();
    assert!(
        close(d.records[0].metrics.stat_diff, 0.005),
        "{:?}",
        d.records[0].metrics
    );
    assert_eq!(d.records[0].verdict, Status::Pass);
    assert_eq!(d.records[1].verdict, Status::Fail);
    assert!(d.records[0].metrics.cosine.is_none());

    // The reference: the baseline is off by 0.01 in record a and 0.02 in record b; the
    // candidate by 0.005 (better: pass), and by 0.035 (1.75×: warn).
    let r = stats_dump(
        &tmp.path().join("r"),
        "m",
        &[
            ("aten::a#0.forward.output.0", [-1.0, 1.0, 0.01, 10.0]),
            ("aten::b#0.forward.output.0", [-1.0, 1.0, 0.0, 10.0]),
        ],
    );
    fs::write(
        tmp.path().join("r/rank0/step1/meta.json"),
        meta("m", 1, "stats", "float64").to_string(),
    )
    .unwrap();
    let c2 = stats_dump(
        &tmp.path().join("c2"),
        "m",
        &[
            ("aten::a#0.forward.output.0", [-1.0, 1.0, 0.005, 10.0]),
            ("aten::b#0.forward.output.0", [-1.0, 1.0, 0.035, 10.0]),
        ],
    );
    let b2 = stats_dump(
        &tmp.path().join("b2"),
        "m",
        &[
            ("aten::a#0.forward.output.0", [-1.0, 1.0, 0.0, 10.0]),
            ("aten::b#0.forward.output.0", [-1.0, 1.0, 0.02, 10.0]),
        ],
    );
    let mut o = opts(&b2, &c2);
    o.reference = Some(r.clone());
    let d = diff::diff(&o).unwrap();
    let arb: Vec<_> = d
        .records
        .iter()
        .map(|x| x.reference.clone().unwrap())
        .collect();
    assert!(
        (arb[0].ratio - 0.5).abs() < 1e-9 && arb[0].verdict == Status::Pass,
        "{arb:?}"
    );
    assert!(
        (arb[1].ratio - 1.75).abs() < 1e-9 && arb[1].verdict == Status::Warn,
        "{arb:?}"
    );
    // Record b fails the stats rule alone (stat_diff 0.015 > 0.01), but with a reference the
    // verdict is the arbitration's, and a warn does not fail the diff.
    assert_eq!(d.records[1].rule_verdict, Status::Fail);
    assert_eq!(d.records[1].verdict, Status::Warn);
    assert!(d.pass, "{:?}", d.records);
    assert_eq!(d.totals.warn, 1);

    // 3× worse than the baseline: fail.
    let c3 = stats_dump(
        &tmp.path().join("c3"),
        "m",
        &[
            ("aten::a#0.forward.output.0", [-1.0, 1.0, 0.04, 10.0]),
            ("aten::b#0.forward.output.0", [-1.0, 1.0, 0.0, 10.0]),
        ],
    );
    let mut o = opts(&b2, &c3);
    o.reference = Some(r);
    let d = diff::diff(&o).unwrap();
    assert_eq!(d.records[0].verdict, Status::Fail);
    assert!((d.records[0].reference.as_ref().unwrap().ratio - 3.0).abs() < 1e-9);
    assert!(!d.pass);
}

#[test]
fn full_tensor_arbitration_uses_rmse_against_the_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let r = [1.0, 2.0, 3.0, 4.0];
    let mk = |name: &str, v: [f64; 4]| {
        dump(
            &tmp.path().join(name),
            "m",
            1,
            &[t("aten::mm", 0, "forward", "output", &v)],
        )
    };
    let b = mk("b", [1.0, 2.0, 3.0, 4.0]);
    let c = mk("c", [1.0, 2.0, 3.0, 4.0]);
    let rf = mk("r", r);
    let mut o = opts(&b, &c);
    o.reference = Some(rf.clone());
    let d = diff::diff(&o).unwrap();
    // Both exact: the error floor makes the ratio 1, a pass (not 0/0).
    let a = d.records[0].reference.as_ref().unwrap();
    assert_eq!((a.ratio, a.verdict), (1.0, Status::Pass));
    let b = mk("b2", [1.0, 2.0, 3.0, 4.5]);
    let c = mk("c2", [1.0, 2.0, 3.0, 5.5]);
    let mut o = opts(&b, &c);
    o.reference = Some(rf);
    let d = diff::diff(&o).unwrap();
    let a = d.records[0].reference.as_ref().unwrap();
    assert!((a.ratio - 3.0).abs() < 1e-6, "{a:?}");
    assert_eq!(d.records[0].verdict, Status::Fail);
    assert!(
        d.records[0].reason.contains("3.00×"),
        "{}",
        d.records[0].reason
    );
}

#[test]
fn report_files_are_written_with_every_record() {
    let tmp = tempfile::tempdir().unwrap();
    let a = dump(
        &tmp.path().join("a"),
        "m",
        1,
        &[
            t("aten::mul", 0, "forward", "output", &[1.0]),
            t("aten::add", 0, "forward", "output", &[1.0]),
        ],
    );
    let c = dump(
        &tmp.path().join("c"),
        "m",
        1,
        &[
            t("aten::mul", 0, "forward", "output", &[1.0]),
            t("aten::add", 0, "forward", "output", &[3.0]),
        ],
    );
    let d = diff::diff(&opts(&a, &c)).unwrap();
    let out = tmp.path().join("report");
    report::write_report(&out, &d, "modelzoo diff").unwrap();
    for f in report::FILES {
        assert!(out.join(f).is_file(), "{f}");
    }
    let csv = fs::read_to_string(out.join("records.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv
        .lines()
        .nth(2)
        .unwrap()
        .contains("aten::add#0.forward.output.0"));
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<script>") && html.contains("class=\"sortable\""));
    assert!(!html.contains("http"), "self-contained");
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("first divergence: aten::add#0.forward.output.0"),
        "{md}"
    );
    assert!(
        md.contains("cosine < 0.99 and max_abs > 0.001"),
        "the rules are stated"
    );
}

/// issue #28: a NaN candidate passed when the reference was NaN too (the arbitration measures
/// errors over finite elements only, and its verdict replaced msprobe's). NaN/Inf in the
/// candidate now fail the record whatever the baseline and the reference hold.
#[test]
fn a_non_finite_candidate_fails_whatever_the_reference_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let b = dump(
        &tmp.path().join("b"),
        "m",
        1,
        &[
            t("aten::div", 0, "forward", "output", &[1.0, 2.0, 3.0, 4.0]),
            t(
                "aten::log",
                0,
                "forward",
                "output",
                &[1.0, 2.0, 3.0, f64::NAN],
            ),
            t("aten::mul", 0, "forward", "output", &[1.0, 2.0, 3.0, 4.0]),
        ],
    );
    let c = dump(
        &tmp.path().join("c"),
        "m",
        1,
        &[
            t(
                "aten::div",
                0,
                "forward",
                "output",
                &[1.0, 2.0, 3.0, f64::NAN],
            ),
            t(
                "aten::log",
                0,
                "forward",
                "output",
                &[1.0, 2.0, 3.0, f64::NAN],
            ),
            t(
                "aten::mul",
                0,
                "forward",
                "output",
                &[1.0, 2.0, 3.0, f64::INFINITY],
            ),
        ],
    );
    let r = dump(
        &tmp.path().join("r"),
        "m",
        1,
        &[
            t(
                "aten::div",
                0,
                "forward",
                "output",
                &[1.0, 2.0, 3.0, f64::NAN],
            ),
            t(
                "aten::log",
                0,
                "forward",
                "output",
                &[1.0, 2.0, 3.0, f64::NAN],
            ),
            t(
                "aten::mul",
                0,
                "forward",
                "output",
                &[1.0, 2.0, 3.0, f64::INFINITY],
            ),
        ],
    );
    let mut o = opts(&b, &c);
    o.reference = Some(r);
    let d = diff::diff(&o).unwrap();
    assert!(!d.pass);
    for rd in &d.records {
        assert_eq!(rd.verdict, Status::Fail, "{}: {}", rd.key, rd.reason);
        assert_eq!(rd.metrics.candidate_non_finite, Some(1), "{}", rd.key);
        assert!(
            rd.reason
                .starts_with("the candidate holds 1 NaN/Inf element(s)")
                && rd
                    .reason
                    .contains("fails whatever the baseline and the reference hold"),
            "{}",
            rd.reason
        );
    }
    assert_eq!(d.first().unwrap().key, "aten::div#0.forward.output.0");
    // Without a reference too: a NaN the baseline holds in the same place (msprobe counts it
    // as matching) fails.
    let d = diff::diff(&opts(&b, &c)).unwrap();
    assert_eq!(d.records[1].rule_verdict, Status::Pass);
    assert_eq!(d.records[1].verdict, Status::Fail);
    // records.csv carries the count.
    let csv = report::csv(&d);
    assert!(
        csv.lines().next().unwrap().contains("candidate_non_finite"),
        "{csv}"
    );
    // A clean candidate passes against a NaN reference as before.
    let clean = dump(
        &tmp.path().join("clean"),
        "m",
        1,
        &[
            t("aten::div", 0, "forward", "output", &[1.0, 2.0, 3.0, 4.0]),
            t("aten::log", 0, "forward", "output", &[1.0, 2.0, 3.0, 5.0]),
            t("aten::mul", 0, "forward", "output", &[1.0, 2.0, 3.0, 4.0]),
        ],
    );
    let mut o = opts(&clean, &clean);
    o.reference = Some(tmp.path().join("r"));
    let d = diff::diff(&o).unwrap();
    assert!(d
        .records
        .iter()
        .all(|r| r.metrics.candidate_non_finite == Some(0)));
}
