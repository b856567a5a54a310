//! `compare` on the log shapes issue #25 found unread or misread — build-in models'
//! `Epoch[n]: train_loss … | val_loss …` summaries, NLP models' `step,loss` CSV — with the
//! default metric falling back to `train_loss` / `loss`; and the run configuration each log
//! states (PARAMETER and FINISHED records), compared before the verdict, with what to run
//! next after a FAIL. Every log is a file written here in the shape of the real ones.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use dllogger::{JsonStreamBackend, Logger, Verbosity};
use validator::compare::{compare_files, Align, CompareError, Options};
use validator::report;

/// An epoch-summary log in the shape of the public ModelZoo's ReXNet logs: INFO chatter, an
/// env banner, `==== Epoch n/N ====` before each `Epoch[n]: …` line.
fn epoch_log(path: &Path, epochs: usize, scale: f64) {
    let mut s = String::from("[INFO] Creating model with 100 output classes.\n");
    s.push_str("--------------+------------------\n Torch-SDAA   | 2.0.0\n--------------+------------------\n");
    for e in 0..epochs {
        let tl = (4.0 * (-(e as f64) / 8.0).exp() + 0.2) * scale;
        let a1 = 6.0 + 8.0 * e as f64;
        writeln!(
            s,
            "==== Epoch {e}/{} ====\nEpoch[{e}]: train_loss {tl:.4} acc1 {a1:.2} acc5 {:.2} | val_loss {:.4} acc1 {:.2} acc5 {:.2} lr 0.100000",
            epochs - 1,
            a1 + 20.0,
            tl * 1.1,
            a1 - 1.0,
            a1 + 18.0
        )
        .unwrap();
    }
    s.push_str("Training finished. Best val acc1: 60.00\n");
    fs::write(path, s).unwrap();
}

/// Issue #25: the default metric exited 2 on build-in models' logs and their steps showed as
/// "unnumbered step (occurrence N)"; now the default falls back to `train_loss`, says so, and
/// pairs by epoch; the validation values (`val_acc1`) are compared as eval metrics.
#[test]
fn epoch_summaries_compare_by_epoch_with_the_train_loss_fallback() {
    let t = tempfile::tempdir().unwrap();
    let (cuda, sdaa) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
    epoch_log(&cuda, 20, 1.0);
    epoch_log(&sdaa, 20, 1.003);
    let cmp = compare_files(&cuda, &sdaa, &Options::default()).unwrap();
    assert_eq!(cmp.metric, "train_loss");
    assert_eq!(cmp.baseline.metric, "train_loss");
    assert_eq!(cmp.figures.steps_compared, 20);
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    assert_eq!(cmp.pairs.get(3).key.to_string(), "epoch 3");
    assert!(
        cmp.eval.iter().any(|e| e.metric == "val_acc1"),
        "{:?}",
        cmp.eval
    );
    let text = report::text(&cmp);
    assert!(
        text.contains("note: metric of the baseline: `train_loss` (no `train.loss` in this log: the default metric fell back to `train_loss`)"),
        "{text}"
    );
    assert!(!text.contains("unnumbered step"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&report::summary_json(&cmp, "c")).unwrap();
    assert_eq!(json["baseline"]["metric"], "train_loss");
    assert!(json["candidate"]["metric_note"]
        .as_str()
        .unwrap()
        .contains("fell back"));

    // An explicit --metric does not fall back: the error lists what the log has.
    let strict = Options {
        metric_fallback: false,
        ..Options::default()
    };
    let e = compare_files(&cuda, &sdaa, &strict)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("metric `train.loss` is absent for rank 0")
            && e.contains("train_loss, val_acc1"),
        "{e}"
    );
    // With the fallback and none of the names in the log, the error names all three.
    fs::write(&sdaa, "Epoch[0]: acc1 1.0 | acc1 2.0\n").unwrap();
    let e = compare_files(&cuda, &sdaa, &Options::default()).unwrap_err();
    assert!(matches!(e, CompareError::MetricAbsent { .. }));
    assert!(
        e.to_string()
            .contains("metric `train.loss` (nor its fallbacks `train_loss`, `loss`) is absent"),
        "{e}"
    );
}

/// Issue #25: NLP models' `step,loss` CSV logs were unread (exit 2); the header is kept and
/// the rows pair by step, the default falling back to `loss`.
#[test]
fn csv_logs_compare_by_step_with_the_loss_fallback() {
    let t = tempfile::tempdir().unwrap();
    let (cuda, sdaa) = (
        t.path().join("cuda_loss.log"),
        t.path().join("sdaa_loss.log"),
    );
    let write = |p: &Path, scale: f64, steps: usize| {
        let mut s = String::from("step,loss\n");
        for i in 1..=steps {
            writeln!(s, "{i},{:.6}", (0.03 / i as f64 + 0.01) * scale).unwrap();
        }
        fs::write(p, s).unwrap();
    };
    write(&cuda, 1.0, 100);
    write(&sdaa, 1.004, 100);
    let cmp = compare_files(&cuda, &sdaa, &Options::default()).unwrap();
    assert_eq!(
        (cmp.metric.as_str(), cmp.figures.steps_compared),
        ("loss", 100)
    );
    assert_eq!(cmp.pairs.get(0).key.to_string(), "iteration 1");
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);

    // A tcap log against a CSV one: the logs name their loss differently; said, and compared
    // by position (the tcap steps carry an epoch, the CSV ones do not).
    let tcap = t.path().join("tcap.log");
    let mut s = String::new();
    for i in 1..=100 {
        writeln!(
            s,
            "TCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: 0 Iteration: {i}  rank : 0  train.loss : {:.6}",
            0.03 / i as f64 + 0.01
        )
        .unwrap();
    }
    fs::write(&tcap, s).unwrap();
    let opts = Options {
        align: Align::Order,
        ..Options::default()
    };
    let cmp = compare_files(&tcap, &sdaa, &opts).unwrap();
    assert_eq!(
        (cmp.baseline.metric.as_str(), cmp.candidate.metric.as_str()),
        ("train.loss", "loss")
    );
    assert!(
        cmp.verdict
            .warnings
            .iter()
            .any(|w| w.contains("the baseline's loss is `train.loss` and the candidate's `loss`")),
        "{:?}",
        cmp.verdict.warnings
    );
}

/// Issue #41: a tcap stdout log (`Epoch: 0 Iteration: n`, counting from 0 as `enumerate`
/// does) and an NLP model's CSV (`step,loss`, counting from 1) name the same training steps;
/// the default pairing pairs them, each log's first step with the other's, and says so.
#[test]
fn a_text_log_and_a_csv_log_pair_by_the_training_step() {
    let t = tempfile::tempdir().unwrap();
    let (cuda, sdaa) = (t.path().join("cuda.log"), t.path().join("sdaa_loss.csv"));
    let loss = |step: usize| 2.0 / step as f64 + 0.5;
    let mut s = String::from("[W Module.cpp] torchrun warning\n");
    for i in 0..100 {
        writeln!(
            s,
            "TCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: 0 Iteration: {i}  rank : 0  train.loss : {:.6}  train.ips : 10.0 imgs/s",
            loss(i + 1)
        )
        .unwrap();
    }
    fs::write(&cuda, s).unwrap();
    let mut s = String::from("step,loss\n");
    for step in 1..=100 {
        writeln!(s, "{step},{:.6}", loss(step) * 1.002).unwrap();
    }
    fs::write(&sdaa, s).unwrap();
    let cmp = compare_files(&cuda, &sdaa, &Options::default()).unwrap();
    assert_eq!(cmp.align, Align::Key);
    assert_eq!(
        (
            cmp.figures.steps_compared,
            cmp.only_in_baseline,
            cmp.only_in_candidate
        ),
        (100, 0, 0)
    );
    // Step 1 of each: 2.5 against 2.5 × 1.002 (paired one step apart it would be 2.5 against
    // 1.5 × 1.002), and so on to the last.
    for i in [0, 1, 99] {
        let p = cmp.pairs.get(i);
        assert!(
            (p.candidate / p.baseline - 1.002).abs() < 1e-5,
            "pair {i}: {} vs {}",
            p.baseline,
            p.candidate
        );
    }
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    let text = report::text(&cmp);
    assert!(
        text.contains("the baseline counts from 0 and the candidate from 1, so the candidate's step 1 is paired with the baseline's 0"),
        "{text}"
    );
}

/// Issue #41: validate's logs.device rule flags a CUDA log that carries the Torch-SDAA banner;
/// compare, given such a log as its baseline, warns the same way (the same detection).
#[test]
fn a_baseline_with_the_torch_sdaa_banner_is_warned_about() {
    let t = tempfile::tempdir().unwrap();
    let (cuda, sdaa) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
    let log = |p: &Path, banner: bool| {
        let mut s = String::new();
        if banner {
            s.push_str("--------------+------------------\n Host IP      | 127.0.1.1\n Torch-SDAA   | 2.1.1b0+gitebfa9da\n--------------+------------------\n");
        }
        for i in 0..20 {
            writeln!(
                s,
                "TCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: 0 Iteration: {i}  rank : 0  train.loss : {:.6}",
                1.0 / (i + 1) as f64 + 0.5
            )
            .unwrap();
        }
        fs::write(p, s).unwrap();
    };
    log(&cuda, true);
    log(&sdaa, true);
    let cmp = compare_files(&cuda, &sdaa, &Options::default()).unwrap();
    let text = report::text(&cmp);
    assert!(
        text.contains("warning: the baseline is to be the CUDA run, but it is an SDAA run: its line 3 holds the Torch-SDAA banner"),
        "{text}"
    );
    // The candidate's banner is what an SDAA run prints; a CUDA baseline without one is clean.
    log(&cuda, false);
    let cmp = compare_files(&cuda, &sdaa, &Options::default()).unwrap();
    assert!(
        !report::text(&cmp).contains("is an SDAA run"),
        "{:?}",
        cmp.verdict.warnings
    );
}

/// A run_<model> JSON stream, as the engine writes it: the PARAMETER record, a loss per step,
/// then the driver's TRAIN_END and FINISHED events. `extra` is added to PARAMETER.
fn engine_log(path: &Path, steps: u64, scale: f64, batch: i64, extra: &[(&str, &str)]) {
    let mut log = Logger::new(vec![Box::new(
        JsonStreamBackend::create(Verbosity::Verbose, path).unwrap(),
    )])
    .with_rank(Some(0));
    let mut parameters: Vec<(&str, dllogger::Value)> = vec![
        ("batch_size", batch.into()),
        ("world_size", 1i64.into()),
        ("global_batch_size", batch.into()),
        ("parameters", 11_689_512i64.into()),
    ];
    for (k, v) in extra {
        parameters.push((k, dllogger::Value::Str(v.to_string())));
    }
    log.log("PARAMETER", &parameters, Verbosity::Default);
    for i in 0..steps {
        let loss = (2.5 * (-(i as f64) / 30.0).exp() + 0.4) * scale;
        log.log(
            (0u64, i),
            &[("train.loss", loss.into()), ("train.ips", 100.0.into())],
            Verbosity::Default,
        );
    }
    log.log("TRAIN_END", &[("time", 1.0.into())], Verbosity::Default);
    log.log(
        "FINISHED",
        &[
            ("e2e_time", 9.5.into()),
            ("steps", (steps as i64).into()),
            ("world_size", 1i64.into()),
            ("num_params", 11_689_512i64.into()),
        ],
        Verbosity::Default,
    );
    log.finish().unwrap();
}

/// Issue #25 item 4: `run_resnet` on the CPU (channels-last) against the emulator (nchw)
/// failed at 7.1% and nothing said the runs computed different things. What each log says
/// about its run is compared and every difference named before the verdict, in every output;
/// a FAIL ends with the next commands: a second-seed baseline for --noise, the --dump runs,
/// `modelzoo diff`.
#[test]
fn run_configuration_differences_are_named_before_the_verdict() {
    let t = tempfile::tempdir().unwrap();
    let (cpu, emu) = (t.path().join("cpu.json"), t.path().join("emu.json"));
    engine_log(
        &cpu,
        100,
        1.0,
        32,
        &[("memory_format", "nhwc"), ("device", "cpu")],
    );
    engine_log(
        &emu,
        100,
        1.071,
        32,
        &[("memory_format", "nchw"), ("device", "sdaa")],
    );
    let cmp = compare_files(&cpu, &emu, &Options::default()).unwrap();
    assert!(!cmp.verdict.pass);
    let c = &cmp.config;
    assert_eq!(c.differences.len(), 1, "{c:?}");
    assert_eq!(
        (
            c.differences[0].fact.as_str(),
            c.differences[0].baseline.as_str(),
            c.differences[0].candidate.as_str()
        ),
        ("memory_format", "nhwc", "nchw")
    );
    let same: Vec<&str> = c.same.iter().map(|d| d.fact.as_str()).collect();
    assert_eq!(
        same,
        [
            "batch_size",
            "global_batch_size",
            "parameters",
            "steps",
            "world_size"
        ]
    );
    assert_eq!(c.expected[0].fact, "device");
    assert_eq!(c.unstated, ["model", "precision", "lr", "seed"]);

    let text = report::text(&cmp);
    let differs = text
        .find("differs: memory_format (memory_format): baseline nhwc, candidate nchw")
        .unwrap_or_else(|| panic!("{text}"));
    let verdict = text.find("\nFAIL (").unwrap();
    assert!(differs < verdict, "named before the verdict: {text}");
    assert!(text.contains("not stated in either log, so not checked: model, precision, lr, seed"));
    let next = text.find("next, to find out why:").expect("next steps");
    assert!(next > verdict, "{text}");
    let tail = &text[next..];
    let (a, b, d, e) = (
        tail.find("1. make the two runs compute the same thing first: they differ in memory_format"),
        tail.find("2. measure run-to-run variation"),
        tail.find("3. dump one training step"),
        tail.find("4. find the op that drifted: modelzoo diff --baseline dumps/cuda --candidate dumps/sdaa"),
    );
    assert!(
        a.is_some() && b.is_some() && d.is_some() && e.is_some(),
        "{tail}"
    );
    assert!(tail.contains(&format!(
        "modelzoo compare --baseline {} --candidate {} --noise <that run's log>",
        cpu.display(),
        emu.display()
    )));

    let out = t.path().join("report");
    report::write_report(&out, &cmp, "modelzoo compare").unwrap();
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    let row = md
        .find("| memory_format (memory_format) | nhwc | nchw | **differs** |")
        .unwrap_or_else(|| panic!("{md}"));
    assert!(row < md.find("**FAIL (").unwrap(), "{md}");
    assert!(md.contains("4. find the op that drifted"), "{md}");
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    let row = html
        .find("<tr class=\"fail\"><td>memory_format (memory_format)</td><td>nhwc</td><td>nchw</td><td>differs</td></tr>")
        .unwrap_or_else(|| panic!("{html}"));
    assert!(row < html.find("<strong>FAIL (").unwrap());
    assert!(html.contains("<li>find the op that drifted"), "{html}");
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["config"]["differences"][0]["fact"], "memory_format");
    assert_eq!(json["config"]["baseline"]["memory_format"], "nhwc");
    assert_eq!(json["config"]["baseline"]["steps"], "100");
    assert_eq!(json["next_steps"].as_array().unwrap().len(), 4);

    // The engine's own PARAMETER record today: batch size, world size, parameters; FINISHED
    // adds steps. A different batch size is named; a PASS has no next steps.
    engine_log(&cpu, 100, 1.0, 32, &[]);
    engine_log(&emu, 100, 1.001, 64, &[]);
    let cmp = compare_files(&cpu, &emu, &Options::default()).unwrap();
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    assert!(cmp.next_steps.is_empty());
    let facts: Vec<&str> = cmp
        .config
        .differences
        .iter()
        .map(|d| d.fact.as_str())
        .collect();
    assert_eq!(facts, ["batch_size", "global_batch_size"]);
    assert_eq!(
        cmp.config.unstated,
        ["model", "precision", "lr", "seed", "memory format"]
    );
    assert!(cmp
        .verdict
        .warnings
        .iter()
        .any(|w| w.starts_with("the two runs' configurations differ (batch_size: 32 vs 64")));
}

/// tcap_dllogger's JSON stream (Python-repr `data`) and its stdout lines carry the PARAMETER
/// record too (ResNet20's train.py logs model_name, batch_size, world_size, lr, seed,
/// autocast, device); the same values spelled differently (`0.1` / `0.10`, `True` / `true`)
/// are the same.
#[test]
fn python_parameter_records_in_tcap_formats_are_compared() {
    let t = tempfile::tempdir().unwrap();
    let (cuda, sdaa) = (t.path().join("cuda.json"), t.path().join("sdaa.log"));
    let mut s = String::from("TCAPPDLL {\"timestamp\": \"1\", \"datetime\": \"d\", \"elapsedtime\": \"0\", \"type\": \"LOG\", \"step\": \"PARAMETER\", \"data\": \"{'model_name': 'resnet20', 'batch_size': 128, 'world_size': 1, 'lr': 0.1, 'seed': 42, 'autocast': True, 'device': 'cuda'}\"}\n");
    let mut o = String::from("TCAPPDLL 2025-05-15 14:20:10.1 - PARAMETER rank : 0  model_name : resnet20  batch_size : 128  world_size : 1  lr : 0.10  seed : 7  autocast : true  device : sdaa \n");
    for i in 0..50 {
        let v = 2.0 / (1.0 + i as f64 / 10.0);
        writeln!(s, "TCAPPDLL {{\"timestamp\": \"1\", \"datetime\": \"d\", \"elapsedtime\": \"0\", \"type\": \"LOG\", \"step\": [0, {i}], \"data\": \"{{'train.loss': '{v}'}}\"}}").unwrap();
        writeln!(o, "TCAPPDLL 2025-05-15 14:20:10.1 - Epoch: 0 Iteration: {i}  rank : 0  train.loss : {}  train.ips : 10.0 imgs/s", v * 1.002).unwrap();
    }
    fs::write(&cuda, s).unwrap();
    fs::write(&sdaa, o).unwrap();
    let cmp = compare_files(&cuda, &sdaa, &Options::default()).unwrap();
    let c = &cmp.config;
    let diff: Vec<(&str, &str, &str)> = c
        .differences
        .iter()
        .map(|d| (d.fact.as_str(), d.baseline.as_str(), d.candidate.as_str()))
        .collect();
    assert_eq!(diff, [("seed", "42", "7")]);
    let same: Vec<&str> = c.same.iter().map(|d| d.fact.as_str()).collect();
    assert_eq!(
        same,
        ["autocast", "batch_size", "lr", "model", "world_size"]
    );
    assert_eq!(c.unstated, ["memory format", "steps"]);
}

/// A DETR-style detection console (docs/compare.md, "Detection logs"), written here in the
/// shape `MetricLogger.log_every` and pycocotools print it: `epochs` epochs of `len`
/// iterations logged every 5, the loss at global step g `loss(g)` (the window's median, the
/// global average beside it), each epoch's `Averaged stats:` and a COCO summary whose mAP is
/// `map(epoch)`.
fn detection_log(
    path: &Path,
    epochs: u64,
    len: u64,
    loss: impl Fn(u64) -> f64,
    map: impl Fn(u64) -> f64,
) {
    let mut s = String::from("Start training\n");
    for e in 0..epochs {
        for i in (0..len).filter(|i| i % 5 == 0 || *i == len - 1) {
            let l = loss(e * len + i);
            writeln!(
                s,
                "Epoch: [{e}]  [{i:>2}/{len}]  eta: 0:00:09  lr: 0.000100  class_error: 80.00  grad_norm: 12.50  loss: {l:.4} ({:.4})  loss_ce: {:.4} ({:.4})  loss_bbox: {:.4} ({:.4})  loss_giou: {:.4} ({:.4})  time: 0.5000  data: 0.0100  max mem: 900",
                l * 1.2,
                l * 0.3,
                l * 0.35,
                l * 0.5,
                l * 0.55,
                l * 0.2,
                l * 0.25
            )
            .unwrap();
        }
        writeln!(s, "Epoch: [{e}] Total time: 0:00:10 (0.5000 s / it)").unwrap();
        writeln!(
            s,
            "Averaged stats: lr: 0.000100  class_error: 80.00  loss: {:.4} ({:.4})",
            loss(e * len),
            loss(e * len) * 1.2
        )
        .unwrap();
        s.push_str("Test:  [0/2]  eta: 0:00:01  class_error: 90.00  loss: 9.0000 (9.0000)  time: 0.1000  data: 0.0100\nAccumulating evaluation results...\nIoU metric: bbox\n");
        let m = map(e);
        for (ap, iou, area, dets, v) in [
            (true, "0.50:0.95", "all", 100, m),
            (true, "0.50", "all", 100, m * 1.6),
            (true, "0.75", "all", 100, m * 1.1),
            (false, "0.50:0.95", "all", 100, m * 1.5),
        ] {
            let (title, ty) = if ap {
                ("Average Precision", "(AP)")
            } else {
                ("Average Recall", "(AR)")
            };
            writeln!(
                s,
                " {title:<18} {ty} @[ IoU={iou:<9} | area={area:>6} | maxDets={dets:>3} ] = {v:.3}"
            )
            .unwrap();
        }
    }
    fs::write(path, s).unwrap();
}

/// Issue #39 item 5: two detection logs compare on `train.loss` (the MetricLogger's median,
/// not a sub-loss) step by step, and on `val.mAP` by the mAP rule: a PASS, a FAIL when the
/// candidate's loss drifts, a FAIL when its mAP is lower by more than the rule.
#[test]
fn detection_logs_compare_on_the_loss_and_the_map_rule() {
    let t = tempfile::tempdir().unwrap();
    let (cuda, sdaa) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
    let loss = |g: u64| 20.0 / (1.0 + 0.05 * g as f64);
    let map = |e: u64| 0.02 + 0.1 * e as f64;
    detection_log(&cuda, 3, 23, loss, map);
    detection_log(&sdaa, 3, 23, |g| loss(g) * 1.0005, map);
    let cmp = compare_files(&cuda, &sdaa, &Options::default()).unwrap();
    assert_eq!(cmp.metric, "train.loss");
    assert_eq!(cmp.baseline.metric_note, None);
    // 6 lines an epoch (i = 0, 5, 10, 15, 20, 22), numbered by the global step.
    assert_eq!(cmp.figures.steps_compared, 18);
    assert_eq!(cmp.pairs.get(6).key.to_string(), "epoch 1 iteration 23");
    assert!(
        (cmp.pairs.get(17).baseline - (loss(68) * 1e4).round() / 1e4).abs() < 1e-12,
        "{:?}",
        cmp.pairs.get(17)
    );
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    assert!(
        cmp.verdict.reason.contains("`val.mAP` (higher is better)"),
        "{}",
        cmp.verdict.reason
    );
    let m = cmp.eval.iter().find(|e| e.metric == "val.mAP").unwrap();
    assert!((m.baseline - 0.22).abs() < 1e-12, "{m:?}");

    // The candidate's loss drifts by 3% over its last steps: the loss rule fails.
    detection_log(
        &sdaa,
        3,
        23,
        |g| loss(g) * if g >= 46 { 1.03 } else { 1.0 },
        map,
    );
    let cmp = compare_files(&cuda, &sdaa, &Options::default()).unwrap();
    assert!(!cmp.verdict.pass, "{}", cmp.verdict.reason);
    assert!(
        cmp.verdict
            .reason
            .starts_with("|relative error of the final value|"),
        "{}",
        cmp.verdict.reason
    );

    // The same loss, an mAP 0.01 lower at the end (more than 1% of 0.22 and than 0.005).
    detection_log(&sdaa, 3, 23, loss, |e| map(e) - 0.01 * e as f64 / 2.0);
    let cmp = compare_files(&cuda, &sdaa, &Options::default()).unwrap();
    assert!(!cmp.verdict.pass);
    assert!(
        cmp.verdict
            .reason
            .starts_with("`val.mAP` (higher is better): candidate 0.21 vs baseline 0.22"),
        "{}",
        cmp.verdict.reason
    );
    assert!(
        cmp.verdict.reason.contains("(the loss alone: PASS"),
        "{}",
        cmp.verdict.reason
    );
    let text = report::text(&cmp);
    assert!(text.contains("val.mAP"), "{text}");
}
