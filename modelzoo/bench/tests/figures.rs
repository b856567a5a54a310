//! finished_info from a run's driver events: FlagPerf's invariants, MFU and its refusals, the
//! results' statistics, scaling efficiency and vendor-vs-nvidia ratio, and the EMULATOR mark
//! and per-unit axes of every output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use modelzoo_bench::config::{CaseStore, Resolved};
use modelzoo_bench::finished::{check_invariants, finished_info, read_log, LogFacts};
use modelzoo_bench::key::CaseKey;
use modelzoo_bench::results::{
    compare_cases, csv, markdown, p_whole_svg, CaseResult, Results, Stat,
};
use modelzoo_bench::round::RoundResult;
use serde_yaml::Value;

fn case(key: &str) -> Resolved {
    let store = CaseStore::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")).unwrap();
    let key: CaseKey = key.parse().unwrap();
    store
        .resolve(&key, &[("data_dir".into(), Value::String(".".into()))])
        .unwrap()
}

/// A log whose FINISHED event says: 10 s of training, 2 s of it evaluating, 1 s waiting for
/// data, 1000 items.
fn log(extra: &[(&str, f64)]) -> LogFacts {
    let mut fin: BTreeMap<String, f64> = [
        ("init_time", 1.5),
        ("raw_train_time", 10.0),
        ("eval_time", 2.0),
        ("data_time", 1.0),
        ("items", 1000.0),
        ("world_size", 1.0),
        ("steps", 50.0),
        ("num_params", 1.0e6),
        ("host_rss_peak", 2.0e9),
        ("host_mem_total", 8.0e9),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), *v))
    .collect();
    for (k, v) in extra {
        fin.insert(k.to_string(), *v);
    }
    let mut facts = LogFacts::default();
    facts.events.insert("FINISHED".into(), fin);
    facts.last.insert("val.top1".into(), 80.0);
    facts.last.insert("val.loss".into(), 3.0);
    facts.parameters.insert("global_batch_size".into(), 16.0);
    facts
}

#[test]
fn the_timing_split_gives_ordered_throughputs_and_the_invariants_hold() {
    let c = case("resnet:rust-tch:cpu:1:1:1");
    let i = finished_info(&c, 1, 12.5, &log(&[])).unwrap();
    assert_eq!(i.p_whole, 1000.0 / 12.5);
    assert_eq!(i.p_train, 1000.0 / 8.0);
    assert_eq!(i.p_core, 1000.0 / 7.0);
    assert!(i.p_core >= i.p_train && i.p_train >= i.p_whole);
    assert!(i.e2e_time > i.raw_train_time && i.raw_train_time > 0.0);
    assert_eq!((i.final_accuracy, i.final_loss), (Some(80.0), None));
    assert!(i.converged, "80 % against target 76 %");
    assert_eq!(i.mem_kind.as_deref(), Some("host_rss_peak"));
    assert_eq!((i.mem_used, i.mem_total), (Some(2.0e9), Some(8.0e9)));
    assert_eq!(i.global_batch, Some(16.0));
    assert_eq!(i.mfu, None, "resnet is not a transformer case");
    assert_eq!(i.mfu_refused, None);
    assert!(check_invariants(&i).is_ok());
}

#[test]
fn figures_that_break_an_invariant_are_refused() {
    let c = case("resnet:rust-tch:cpu:1:1:1");
    // The bench's wall clock below the run's own training time: a wrong clock.
    let e = finished_info(&c, 1, 9.0, &log(&[])).unwrap_err();
    assert!(e.contains("e2e_time > raw_train_time"), "{e}");
    // Evaluation and data time exceeding training time: negative core time.
    let e =
        finished_info(&c, 1, 12.0, &log(&[("eval_time", 6.0), ("data_time", 5.0)])).unwrap_err();
    assert!(e.contains("p_core ≥ p_train ≥ p_whole"), "{e}");
    let e = finished_info(&c, 1, 12.0, &log(&[("raw_train_time", 0.0)])).unwrap_err();
    assert!(e.contains("raw_train_time"), "{e}");
    let e = finished_info(&c, 1, 12.0, &log(&[("world_size", 2.0)])).unwrap_err();
    assert!(e.contains("2 process(es)"), "{e}");
    let mut no_finish = log(&[]);
    no_finish.events.remove("FINISHED");
    no_finish
        .events
        .insert("TRAIN_START".into(), BTreeMap::new());
    let e = finished_info(&c, 1, 12.0, &no_finish).unwrap_err();
    assert!(
        e.contains("no FINISHED") && e.contains("TRAIN_START"),
        "{e}"
    );
}

#[test]
fn mfu_uses_the_datasheet_peak_and_refuses_impossible_values() {
    // H100, AMP bf16: 1000 tokens / 8 s × 6e11 FLOPs/token over 8 × 989e12 FLOP/s.
    let h100 = case("gpt:rust-tch:H100:1:8:1");
    assert_eq!(h100.precision(), "amp_bf16");
    let facts = log(&[
        ("world_size", 8.0),
        ("flops_per_item", 6.0e11),
        ("num_params", 1.0e11),
    ]);
    let i = finished_info(&h100, 1, 12.0, &facts).unwrap();
    let want = 125.0 * 6.0e11 / (8.0 * 989.0e12) * 100.0;
    assert!((i.mfu.unwrap() - want).abs() < 1e-9, "{:?}", i.mfu);
    let peak = i.mfu_peak.unwrap();
    assert_eq!(peak.flops, 989.0e12);
    assert!(
        peak.source.contains("bf16") && peak.source.contains("H100 SXM datasheet"),
        "{}",
        peak.source
    );
    assert_eq!((i.final_loss, i.final_accuracy), (Some(3.0), None));
    assert!(!i.converged, "loss 3.0 against target 2.85");

    // A FLOP count for a 10x smaller model (the 7B-for-70B mistake): below 2 FLOPs/parameter.
    let facts = log(&[
        ("world_size", 8.0),
        ("flops_per_item", 6.0e10),
        ("num_params", 1.0e11),
    ]);
    let i = finished_info(&h100, 1, 12.0, &facts).unwrap();
    assert_eq!(i.mfu, None);
    assert!(i.mfu_refused.unwrap().contains("another model"));

    // Above 100 %: refused, saying which peak.
    let facts = log(&[
        ("world_size", 8.0),
        ("flops_per_item", 1.0e16),
        ("num_params", 1.0),
    ]);
    let i = finished_info(&h100, 1, 12.0, &facts).unwrap();
    let why = i.mfu_refused.unwrap();
    assert!(
        why.contains("outside (0, 100]") && why.contains("989"),
        "{why}"
    );

    // The CPU has no datasheet peak: the run's measured one, said so.
    let cpu = case("gpt:rust-tch:cpu:1:1:1");
    let facts = log(&[
        ("flops_per_item", 1.0e6),
        ("num_params", 1.0e5),
        ("peak_flops", 1.0e10),
    ]);
    let i = finished_info(&cpu, 1, 12.0, &facts).unwrap();
    assert!((i.mfu.unwrap() - 125.0 * 1.0e6 / 1.0e10 * 100.0).abs() < 1e-9);
    assert!(i.mfu_peak.unwrap().source.contains("measured by the run"));
    let i = finished_info(
        &cpu,
        1,
        12.0,
        &log(&[("flops_per_item", 1.0e6), ("num_params", 1.0e5)]),
    )
    .unwrap();
    assert!(i.mfu_refused.unwrap().contains("no fp32 peak"));
}

#[test]
fn the_log_reader_takes_events_parameters_and_last_metrics() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("resnet18_log.json");
    std::fs::write(
        &path,
        concat!(
            "TCAPPDLL {\"timestamp\": \"1\", \"type\": \"LOG\", \"step\": \"PARAMETER\", \"data\": {\"global_batch_size\": 32}}\n",
            "TCAPPDLL {\"timestamp\": \"1\", \"type\": \"METADATA\", \"metric\": \"train.loss\", \"metadata\": {}}\n",
            "TCAPPDLL {\"timestamp\": \"2\", \"type\": \"LOG\", \"step\": \"INIT_START\", \"data\": {\"time\": 5.0}}\n",
            "TCAPPDLL {\"timestamp\": \"3\", \"type\": \"LOG\", \"step\": [0, 4], \"data\": {\"rank\": 0, \"val.top1\": 10.0}}\n",
            "not a record\n",
            "TCAPPDLL {\"timestamp\": \"4\", \"type\": \"LOG\", \"step\": [0, 8], \"data\": {\"rank\": 0, \"val.top1\": 12.5}}\n",
            "TCAPPDLL {\"timestamp\": \"5\", \"type\": \"LOG\", \"step\": \"FINISHED\", \"data\": {\"items\": 128.0}}\n",
        ),
    )
    .unwrap();
    let f = read_log(&path).unwrap();
    assert_eq!(f.parameters["global_batch_size"], 32.0);
    assert_eq!(f.event("INIT_START", "time"), Some(5.0));
    assert_eq!(f.event("FINISHED", "items"), Some(128.0));
    assert_eq!(f.last["val.top1"], 12.5);
    assert!(read_log(&tmp.path().join("missing.json")).is_err());
}

fn ok_round(c: &Resolved, r: usize, e2e: f64) -> RoundResult {
    RoundResult {
        round: r,
        dir: PathBuf::from(format!("w/round{r}")),
        commands: Vec::new(),
        info: Some(
            finished_info(
                c,
                r,
                e2e,
                &log(&[("world_size", c.key.world_size() as f64)]),
            )
            .unwrap(),
        ),
        error: None,
        log_tail: None,
        run_secs: e2e,
        overhead: 0.01,
        emulated: false,
    }
}

#[test]
fn results_give_spread_scaling_efficiency_and_the_ratio_to_nvidia() {
    assert_eq!(Stat::of(&[]), None);
    let s = Stat::of(&[1.0, 3.0]).unwrap();
    assert_eq!((s.n, s.mean, s.min, s.max), (2, 2.0, 1.0, 3.0));
    assert!((s.std - 2f64.sqrt()).abs() < 1e-12);
    assert_eq!(Stat::of(&[4.0]).unwrap().std, 0.0);

    let mut cases = Vec::new();
    for (key, e2es) in [
        ("resnet:rust-tch:cpu:1:1:2", vec![12.5, 12.5]),
        ("resnet:rust-tch:cpu:1:2:1", vec![20.0]),
        ("resnet:rust-tch:sdaa:1:8:1", vec![12.5]),
        ("resnet:rust-tch:A100:1:8:1", vec![25.0]),
    ] {
        let c = case(key);
        let rounds = e2es
            .iter()
            .enumerate()
            .map(|(i, e)| ok_round(&c, i + 1, *e))
            .collect();
        cases.push(CaseResult::new(
            &c.key,
            &c.hardware.vendor,
            &c.base.items,
            rounds,
        ));
    }
    let c = case("resnet:rust-tch:cpu:1:1:2");
    let failed = RoundResult {
        round: 3,
        dir: PathBuf::from("w/round3"),
        commands: vec!["run_resnet --lr nan".into()],
        info: None,
        error: Some("node 0 exited with status 1".into()),
        log_tail: Some("error: loss became non-finite".into()),
        run_secs: 1.0,
        overhead: 0.0,
        emulated: false,
    };
    cases[0].rounds.push(failed);
    cases[0] = CaseResult::new(&c.key, "cpu", "images", cases[0].rounds.clone());
    compare_cases(&mut cases);
    // 1x2: 1000/20 = 50 items/s against 2 × 80 → 31.25 %.
    assert!((cases[1].scaling_efficiency.unwrap() - 50.0 / 160.0).abs() < 1e-12);
    assert_eq!(cases[0].scaling_efficiency, None, "1x1 has no efficiency");
    // sdaa 1x8 at 80 items/s vs A100 1x8 at 40.
    assert_eq!(cases[2].vs_nvidia, vec![("A100".to_string(), 2.0)]);
    assert!(cases[3].vs_nvidia.is_empty());
    assert_eq!(cases[0].failed_rounds(), 1);
    assert_eq!(cases[0].stat("p_whole").unwrap().n, 2);

    let r = Results {
        command: "modelzoo bench --cases ...",
        cases: &cases,
        bench_overhead_secs: 0.1,
        bench_overhead_pct: 0.2,
    };
    let md = markdown(&r);
    assert!(
        md.contains("| resnet:rust-tch:cpu:1x1 | 2/3 | 80.0 ± 0.0 images/s"),
        "{md}"
    );
    assert!(md.contains("31.2 %") && md.contains("2.00× A100"), "{md}");
    assert!(
        md.contains("## Failed rounds") && md.contains("loss became non-finite"),
        "{md}"
    );
    let table = csv(&cases);
    assert_eq!(table.lines().count(), 1 + 5 + 1);
    assert!(
        table.contains("resnet:rust-tch:cpu:1x1,3,failed,node 0 exited with status 1,"),
        "{table}"
    );
    let svg = p_whole_svg(&cases).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("resnet:rust-tch:sdaa:1x8"),
        "{}",
        &svg[..200.min(svg.len())]
    );
}

/// Issue #25 item 4: nothing in results.md / .json / .csv or the picture said a row ran on
/// the SDAA emulator, and images/s and tokens/s shared one axis. Every emulated row is marked
/// EMULATOR; each throughput unit gets its own panel and axis.
#[test]
fn emulated_rows_are_marked_everywhere_and_units_get_their_own_axis() {
    let mut cases = Vec::new();
    for (key, emulated) in [
        ("resnet:rust-tch:cpu:1:1:1", false),
        ("resnet:rust-tch:sdaa:1:1:2", true),
        ("gpt:rust-tch:cpu:1:1:1", false),
    ] {
        let c = case(key);
        let rounds = (1..=c.key.repeat)
            .map(|r| {
                let mut round = ok_round(&c, r, 12.5);
                round.emulated = emulated;
                round.info.as_mut().unwrap().emulated = emulated;
                round
            })
            .collect();
        cases.push(CaseResult::new(
            &c.key,
            &c.hardware.vendor,
            &c.base.items,
            rounds,
        ));
    }
    assert_eq!(
        cases.iter().map(|c| c.emulated).collect::<Vec<_>>(),
        [false, true, false]
    );
    let r = Results {
        command: "modelzoo bench",
        cases: &cases,
        bench_overhead_secs: 0.1,
        bench_overhead_pct: 0.2,
    };
    let md = markdown(&r);
    assert!(
        md.contains("| resnet:rust-tch:sdaa:1x1 (EMULATOR) | 2/2 |"),
        "{md}"
    );
    assert!(md.contains("| resnet:rust-tch:cpu:1x1 | 1/1 |"), "{md}");
    assert!(
        md.contains("**EMULATOR**: resnet:rust-tch:sdaa:1x1 ran on the SDAA emulator"),
        "{md}"
    );
    let table = csv(&cases);
    let header = table.lines().next().unwrap();
    assert!(header.ends_with(",mfu,emulated"), "{header}");
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(rows.len(), 4);
    for row in &rows {
        assert_eq!(
            row.ends_with(",EMULATOR"),
            row.starts_with("resnet:rust-tch:sdaa:1x1,"),
            "{row}"
        );
    }
    let json: serde_json::Value = serde_json::to_value(&r).unwrap();
    assert_eq!(json["cases"][1]["emulated"], true);
    assert_eq!(json["cases"][1]["rounds"][0]["emulated"], true);
    assert_eq!(json["cases"][1]["rounds"][0]["info"]["emulated"], true);
    assert_eq!(json["cases"][0]["emulated"], false);
    let svg = p_whole_svg(&cases).unwrap();
    assert!(svg.contains("resnet:rust-tch:sdaa:1x1 (EMULATOR)"), "{svg}");
    for unit in ["images", "tokens"] {
        assert!(
            svg.contains(&format!("p_whole per case, {unit}/s")),
            "a panel of its own for {unit}/s"
        );
    }
    // A finished_info.json written before the mark reads as not emulated.
    let mut old = serde_json::to_value(cases[0].rounds[0].info.as_ref().unwrap()).unwrap();
    old.as_object_mut().unwrap().remove("emulated");
    let back: modelzoo_bench::finished::FinishedInfo = serde_json::from_value(old).unwrap();
    assert!(!back.emulated);
    // No round succeeded: the picture says so instead of drawing empty axes.
    assert!(p_whole_svg(&[]).unwrap().contains("no round succeeded"));
}
