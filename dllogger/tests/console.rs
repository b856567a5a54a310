//! The loss-line rule on the console output of untouched public scripts: each line below is
//! one a pytorch/examples (or Hugging Face Trainer, mmdetection, tqdm) script prints, quoted
//! as printed, and the test says what the reader must take from it.

use std::io::Cursor;

use dllogger::{parse_line, LineParse, LogFormat, LogReader, Record};

/// The one record `line` gives.
fn one(line: &str) -> Record {
    match parse_line(line.as_bytes()) {
        LineParse::Records(mut r) if r.len() == 1 => r.remove(0),
        other => panic!("{line:?} gave {other:?}"),
    }
}

fn names(r: &Record) -> Vec<&str> {
    r.metrics.iter().map(|(k, _)| k.as_str()).collect()
}

fn step(r: &Record) -> (Option<u64>, Option<u64>) {
    (r.epoch, r.iteration)
}

#[test]
fn mnist_and_vae_train_lines_test_lines_and_epoch_averages() {
    // mnist / mnist_rnn / siamese_network / vae: `Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}`
    let r = one("Train Epoch: 1 [640/60000 (1%)]\tLoss: 0.302001");
    assert_eq!(r.metrics, [("loss".to_owned(), 0.302001)]);
    assert_eq!(step(&r), (Some(1), Some(640)));
    // mnist's evaluation: not the training series.
    let r = one("Test set: Average loss: 0.1026, Accuracy: 9681/10000 (97%)");
    assert_eq!(r.metrics, [("val.loss".to_owned(), 0.1026)]);
    // vae's epoch average is a training summary, its test loss an evaluation.
    let r = one("====> Epoch: 1 Average loss: 164.2311");
    assert_eq!(r.metrics, [("train.avg_loss".to_owned(), 164.2311)]);
    assert_eq!(r.epoch, Some(1));
    assert_eq!(names(&one("====> Test set loss: 127.4402")), ["val.loss"]);
    // super_resolution: per step, then the epoch's average.
    let r = one("===> Epoch[2](5/100): Loss: 0.0123");
    assert_eq!(
        (step(&r), r.get("loss")),
        ((Some(2), Some(5)), Some(0.0123))
    );
    assert_eq!(
        names(&one("===> Epoch 2 Complete: Avg. Loss: 0.0100")),
        ["train.avg_loss"]
    );
}

#[test]
fn imagenet_progress_meter_reads_the_value_not_the_running_average() {
    let r = one("Epoch: [0][  1/5005]\tTime  3.512 ( 3.512)\tData  2.100 ( 2.100)\tLoss 7.1371e+00 (7.1371e+00)\tAcc@1   0.00 (  0.00)\tAcc@5   0.39 (  0.39)");
    assert_eq!(r.metrics, [("loss".to_owned(), 7.1371)]);
    assert_eq!(step(&r), (Some(0), Some(1)));
    let r = one("Epoch: [3][ 11/5005]\tTime  0.512 ( 0.530)\tData  0.011 ( 0.020)\tLoss 6.9012e+00 (7.0001e+00)\tAcc@1   0.00 (  0.10)\tAcc@5   0.39 (  0.49)");
    assert_eq!(
        (step(&r), r.get("loss")),
        ((Some(3), Some(11)), Some(6.9012))
    );
    let r = one("Test: [ 1/196]\tTime  1.234 ( 1.234)\tLoss 6.8810e+00 (6.8810e+00)\tAcc@1   0.39 (  0.39)\tAcc@5   1.17 (  1.17)");
    assert_eq!(names(&r), ["val.loss"]);
}

#[test]
fn word_language_model_batches_valid_and_test_lines() {
    let r = one(
        "| epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch 12.34 | loss  6.76 | ppl   862.00",
    );
    assert_eq!(r.metrics, [("loss".to_owned(), 6.76)]);
    assert_eq!(step(&r), (Some(1), Some(200)));
    let r = one("| end of epoch   1 | time: 45.12s | valid loss  5.50 | valid ppl   244.69");
    assert_eq!((names(&r), r.epoch), (vec!["val.loss"], Some(1)));
    assert_eq!(
        names(&one(
            "| End of training | test loss  5.38 | test ppl   217.00"
        )),
        ["val.loss"]
    );
}

#[test]
fn several_named_losses_on_one_line_are_each_a_metric() {
    // dcgan: `[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f`
    let r =
        one("[0/25][5/1563] Loss_D: 1.2345 Loss_G: 3.4567 D(x): 0.7012 D(G(z)): 0.2100 / 0.1800");
    assert_eq!(
        r.metrics,
        [("Loss_D".to_owned(), 1.2345), ("Loss_G".to_owned(), 3.4567)]
    );
    assert_eq!(step(&r), (Some(0), Some(5)));
    // mmdetection's lines are detection lines: detection_logs_* below.
    // gcn / gat: a training and a validation loss on one line.
    let r = one("Epoch: 0001 (0.1234s) loss_train: 1.9450 acc_train: 0.2000 loss_val: 1.9300 acc_val: 0.3500");
    assert_eq!(
        r.metrics,
        [
            ("loss_train".to_owned(), 1.945),
            ("val.loss".to_owned(), 1.93)
        ]
    );
    // minGPT-ddp: the rank and step words number the line.
    let r = one("[RANK1] Epoch 0 | Iter 40 | Train Loss 2.34567");
    assert_eq!(
        (r.rank, step(&r), names(&r)),
        (1, (Some(0), Some(40)), vec!["loss"])
    );
    assert_eq!(
        names(&one("[RANK0] Epoch 0 | Iter 0 | Eval Loss 2.40000")),
        ["val.loss"]
    );
    let r = one("Rank 2 training batch 7 loss 0.6931471805599453");
    assert_eq!((r.rank, r.iteration), (2, Some(7)));
}

#[test]
fn separators_number_forms_and_what_is_not_a_loss() {
    for (line, want) in [
        ("loss: 0.5", 0.5),
        ("LOSS=2.5E-03", 2.5e-3),
        ("Loss:  1.25", 1.25),
        ("train loss\t+3.5, acc 0.1", 3.5),
        ("loss: tensor(2.2871, grad_fn=<NllLossBackward0>)", 2.2871),
        ("Loss: 0.000123 after 12 batches", 0.000123),
    ] {
        assert_eq!(one(line).get("loss"), Some(want), "{line}");
    }
    assert_eq!(one("train_loss = 1.5").get("train_loss"), Some(1.5));
    assert_eq!(one("step 3 train.loss: 1.5").get("train.loss"), Some(1.5));
    for line in [
        "criterion = nn.BCELoss()",
        "lossy 1.0 closs 2.0 losses 3.0",
        "python main.py --loss 2 --epochs 3",
        "Loss: n/a",
        "loss 5it/s",
        "loss 1.2.3",
    ] {
        assert_eq!(parse_line(line.as_bytes()), LineParse::Skipped, "{line}");
    }
}

#[test]
fn nan_and_inf_are_kept_on_plain_lines() {
    for (line, check) in [
        ("step 9 loss nan", f64::is_nan as fn(f64) -> bool),
        ("Loss: NaN", f64::is_nan),
        ("loss=-nan", f64::is_nan),
        ("loss inf", |v: f64| v == f64::INFINITY),
        ("Loss: -Infinity", |v: f64| v == f64::NEG_INFINITY),
        ("Train Epoch: 3 [640/60000 (1%)]\tLoss: +inf", |v: f64| {
            v == f64::INFINITY
        }),
    ] {
        let v = one(line).get("loss").unwrap_or_else(|| panic!("{line}"));
        assert!(check(v), "{line}: {v}");
    }
}

#[test]
fn tqdm_refreshes_keep_the_last_value_of_each_counter() {
    let line = "\rEpoch 1:   0%|          | 0/100 [00:00<?, ?it/s]\
        \rEpoch 1:   1%|1         | 1/100 [00:00<00:10,  9.50it/s, loss=2.31]\
        \rEpoch 1:   1%|1         | 1/100 [00:00<00:10,  9.50it/s, loss=2.29]\
        \rEpoch 1:   2%|2         | 2/100 [00:00<00:10,  9.60it/s, loss=2.2]\
        \rEpoch 1:   4%|4         | 4/100 [00:00<00:09,  9.70it/s, loss=2.05]\n";
    let recs: Vec<Record> = LogReader::new(Cursor::new(line.as_bytes().to_vec())).collect();
    let got: Vec<(Option<u64>, f64)> = recs
        .iter()
        .map(|r| (r.iteration, r.get("loss").unwrap()))
        .collect();
    assert_eq!(got, [(Some(1), 2.29), (Some(2), 2.2), (Some(4), 2.05)]);
    assert!(recs.iter().all(|r| r.epoch == Some(1)));
}

#[test]
fn hugging_face_trainer_dicts_train_eval_and_final_summary() {
    // Cleared bar, then the dict, on one physical line (tqdm.write).
    let text = "\r 10%|#         | 10/100 [00:02<00:20,  4.50it/s]\r                    \r{'loss': 2.3456, 'grad_norm': 1.25, 'learning_rate': 5e-05, 'epoch': 0.1}\n\
        {'eval_loss': 2.1, 'eval_accuracy': 0.5, 'eval_runtime': 1.5, 'epoch': 1.0}\n\
        {'train_runtime': 12.3, 'train_samples_per_second': 100.0, 'train_loss': 2.2, 'epoch': 1.0}\n";
    let mut r = LogReader::new(Cursor::new(text.as_bytes().to_vec()));
    let recs: Vec<(LogFormat, Record)> = std::iter::from_fn(|| r.next_tagged()).collect();
    assert_eq!(recs.len(), 3);
    assert_eq!(
        recs[0].1.metrics,
        [
            ("loss".to_owned(), 2.3456),
            ("grad_norm".to_owned(), 1.25),
            ("learning_rate".to_owned(), 5e-05)
        ]
    );
    assert_eq!(recs[0].0, LogFormat::PlainLoss);
    assert_eq!(
        names(&recs[1].1),
        ["val.loss", "val.accuracy", "val.runtime"]
    );
    assert_eq!(recs[2].1.get("train.avg_loss"), Some(2.2));
    assert_eq!(recs[2].1.get("train_loss"), None);
    // A dict with no loss is not a loss line (a config print).
    assert_eq!(
        parse_line(b"{'batch_size': 32, 'lr': 0.1}"),
        LineParse::Skipped
    );
}

/// A hostile line (megabytes of loss names, with and without values) is read in linear time:
/// each name is looked at once.
#[test]
fn long_lines_of_loss_names_are_read_in_linear_time() {
    let start = std::time::Instant::now();
    for unit in ["loss_", "loss ", "Loss: 1 ", "LOSS.", "xloss", "loss=nan,"] {
        let line = unit.repeat((4 << 20) / unit.len());
        let _ = parse_line(line.as_bytes());
    }
    // Linear: well under a second in a release build; quadratic would take hours.
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
    let line = "Loss: 1 ".repeat(1000);
    assert_eq!(names(&one(&line)), ["loss"], "one metric per name");
}

// ---------------------------------------------------------------------------------------------
// Detection logs (docs/compare.md, "Detection logs"): each line below is written here in the
// shape the public code prints it (torchvision's / DETR's `MetricLogger.log_every` with the
// `"  "` delimiter, mmcv's `TextLoggerHook`, mmengine's `LogProcessor`, pycocotools'
// `COCOeval.summarize`), from values the test chooses.

/// The loss printed at global step `g`: the window's median, and the global average beside it.
fn det_loss(g: u64) -> (f64, f64) {
    (
        20.0 / (1.0 + g as f64 * 0.1),
        25.0 / (1.0 + g as f64 * 0.05),
    )
}

/// One `MetricLogger` line of a DETR-style training: `lr`, `class_error`, `grad_norm` before
/// the losses (as Deformable-DETR adds its meters), sub-losses whose names contain `loss`,
/// and the timing entries.
fn metric_logger_line(header: &str, i: u64, len: u64, g: u64) -> String {
    let w = len.to_string().len();
    let (med, avg) = det_loss(g);
    format!(
        "{header}  [{i:>w$}/{len}]  eta: 0:01:{:02}  lr: 0.000200  class_error: 87.50  grad_norm: 31.17  loss: {med:.4} ({avg:.4})  loss_ce: {:.4} ({:.4})  loss_bbox: {:.4} ({:.4})  loss_bbox_unscaled: {:.4} ({:.4})  time: 0.4101  data: 0.0113  max mem: 2271",
        len - i,
        med / 10.0,
        avg / 10.0,
        med / 4.0,
        avg / 4.0,
        med / 20.0,
        avg / 20.0
    )
}

/// pycocotools' 12 summary rows, as `COCOeval.summarize` formats them; `map` is the first
/// row, the others derived from it; small objects absent (`-1.000`).
fn coco_summary(map: f64) -> Vec<String> {
    let rows: [(bool, &str, &str, u32, f64); 12] = [
        (true, "0.50:0.95", "all", 100, map),
        (true, "0.50", "all", 100, map * 1.5),
        (true, "0.75", "all", 100, map * 1.1),
        (true, "0.50:0.95", "small", 100, -1.0),
        (true, "0.50:0.95", "medium", 100, map * 0.5),
        (true, "0.50:0.95", "large", 100, map * 1.2),
        (false, "0.50:0.95", "all", 1, map * 0.6),
        (false, "0.50:0.95", "all", 10, map * 0.9),
        (false, "0.50:0.95", "all", 100, map * 1.3),
        (false, "0.50:0.95", "small", 100, -1.0),
        (false, "0.50:0.95", "medium", 100, map * 0.7),
        (false, "0.50:0.95", "large", 100, map * 1.4),
    ];
    rows.iter()
        .map(|&(ap, iou, area, dets, v)| {
            let (title, ty) = if ap {
                ("Average Precision", "(AP)")
            } else {
                ("Average Recall", "(AR)")
            };
            format!(
                " {title:<18} {ty} @[ IoU={iou:<9} | area={area:>6} | maxDets={dets:>3} ] = {v:.3}"
            )
        })
        .collect()
}

/// Rounds as the logs print: to `digits` decimals.
fn printed(v: f64, digits: i32) -> f64 {
    let s = 10f64.powi(digits);
    (v * s).round() / s
}

fn read_text(text: &str) -> (Vec<(LogFormat, Record)>, dllogger::ReadStats) {
    let mut r = LogReader::new(Cursor::new(text.as_bytes().to_vec()));
    let mut recs = Vec::new();
    while let Some(t) = r.next_tagged() {
        recs.push(t);
    }
    (recs, r.stats().clone())
}

#[test]
fn detection_logs_metric_logger_steps_averages_and_the_coco_summary() {
    let (len, freq) = (12u64, 5u64);
    let mut log = vec!["| distributed init (rank 0): env://".to_string()];
    for epoch in 0..2u64 {
        let header = format!("Epoch: [{epoch}]");
        for i in (0..len).filter(|i| i % freq == 0 || *i == len - 1) {
            log.push(metric_logger_line(&header, i, len, epoch * len + i));
        }
        log.push(format!("{header} Total time: 0:00:05 (0.4321 s / it)"));
        let (_, avg) = det_loss(epoch * len + len - 1);
        log.push(format!("Averaged stats: lr: 0.000200  class_error: 50.00  grad_norm: 30.00  loss: 9.0000 ({avg:.4})  loss_ce: 0.9000 ({:.4})", avg / 10.0));
        // The evaluation: its step lines give nothing, its averages are `val.*`.
        log.push("Test:  [0/3]  eta: 0:00:01  class_error: 100.00  loss: 30.1234 (30.1234)  loss_ce: 3.0000 (3.0000)  time: 0.1000  data: 0.0100".into());
        log.push(format!(
            "Averaged stats: class_error: 100.00  loss: 29.5000 ({:.4})  loss_ce: 2.9000 (2.9500)",
            31.0 - epoch as f64
        ));
        log.push("Accumulating evaluation results...".into());
        log.push("IoU metric: bbox".into());
        log.extend(coco_summary(0.01 + 0.1 * epoch as f64));
        log.push("IoU metric: segm".into());
        log.extend(coco_summary(0.005 + 0.05 * epoch as f64));
    }
    let (recs, stats) = read_text(&log.join("\n"));
    assert!(
        recs.iter().all(|(f, _)| *f == LogFormat::Detection),
        "{recs:?}"
    );
    assert_eq!(stats.formats.detection, recs.len() as u64);
    assert_eq!(
        stats.lines,
        stats.record_lines + stats.metadata + stats.skipped + stats.malformed
    );
    // Steps: the median before the bracket is `train.loss`, never a sub-loss's value; the
    // iteration is the global step epoch × len + i.
    let steps: Vec<&Record> = recs
        .iter()
        .map(|(_, r)| r)
        .filter(|r| r.get("train.loss").is_some())
        .collect();
    let want: Vec<u64> = (0..2)
        .flat_map(|e| [0, 5, 10, 11].map(|i| e * len + i))
        .collect();
    assert_eq!(
        steps
            .iter()
            .map(|r| r.iteration.unwrap())
            .collect::<Vec<_>>(),
        want
    );
    for r in &steps {
        let g = r.iteration.unwrap();
        let (med, _) = det_loss(g);
        assert_eq!(r.epoch, Some(g / len));
        assert!(
            (r.get("train.loss").unwrap() - printed(med, 4)).abs() < 1e-12,
            "{r:?}"
        );
        assert!((r.get("train.loss_ce").unwrap() - printed(med / 10.0, 4)).abs() < 1e-12);
        assert!(r.get("train.loss_bbox_unscaled").is_some());
        assert_eq!(r.get("train.lr"), Some(0.0002));
        for timing in [
            "train.time",
            "train.data",
            "train.eta",
            "train.mem",
            "train.max",
        ] {
            assert_eq!(r.get(timing), None, "{timing} in {r:?}");
        }
        assert!(
            r.metrics.iter().all(|(k, _)| k.starts_with("train.")),
            "{r:?}"
        );
    }
    // `Averaged stats:` after training: the global averages, per epoch; one-value meters are
    // not averages and are left out.
    let avgs: Vec<&Record> = recs
        .iter()
        .map(|(_, r)| r)
        .filter(|r| r.get("train.avg_loss").is_some())
        .collect();
    assert_eq!(avgs.len(), 2);
    for (e, r) in avgs.iter().enumerate() {
        let (_, avg) = det_loss(e as u64 * len + len - 1);
        assert_eq!(r.epoch, Some(e as u64));
        assert!((r.get("train.avg_loss").unwrap() - printed(avg, 4)).abs() < 1e-12);
        assert_eq!(r.get("train.avg_lr"), None);
        assert_eq!(r.get("train.avg_class_error"), None);
    }
    // The evaluation's averages are `val.*`, its step lines nothing.
    let vals: Vec<f64> = recs.iter().filter_map(|(_, r)| r.get("val.loss")).collect();
    assert_eq!(vals, [31.0, 30.0]);
    // The COCO summary, per epoch, bbox then segm; `-1.000` rows give nothing.
    let metric = |name: &str| -> Vec<(Option<u64>, f64)> {
        recs.iter()
            .filter_map(|(_, r)| r.get(name).map(|v| (r.epoch, v)))
            .collect()
    };
    assert_eq!(
        metric("val.mAP"),
        [(Some(0), printed(0.01, 3)), (Some(1), printed(0.11, 3))]
    );
    assert_eq!(
        metric("val.AP50"),
        [(Some(0), printed(0.015, 3)), (Some(1), printed(0.165, 3))]
    );
    assert_eq!(metric("val.AP75")[1], (Some(1), printed(0.121, 3)));
    assert_eq!(metric("val.segm_mAP")[1], (Some(1), printed(0.055, 3)));
    assert_eq!(metric("val.AR100")[0], (Some(0), printed(0.013, 3)));
    assert_eq!(metric("val.segm_ARl").len(), 2);
    assert!(metric("val.APs").is_empty() && metric("val.ARs").is_empty());
}

#[test]
fn detection_logs_segm_first_then_bbox_and_no_header_is_bbox() {
    // DETR's evaluator summarises `segm` before `bbox`: each header names the rows after it.
    let mut log = vec!["IoU metric: segm".to_string()];
    log.extend(coco_summary(0.2));
    log.push("IoU metric: bbox".into());
    log.extend(coco_summary(0.3));
    // pycocotools alone (mmdet 2.x) names the type while evaluating; a summary with no header
    // after a complete one is boxes again.
    log.push("Evaluate annotation type *segm*".into());
    log.extend(coco_summary(0.4));
    log.extend(coco_summary(0.5));
    let (recs, _) = read_text(&log.join("\n"));
    let all = |name: &str| -> Vec<f64> { recs.iter().filter_map(|(_, r)| r.get(name)).collect() };
    assert_eq!(all("val.segm_mAP"), [0.2, 0.4]);
    assert_eq!(all("val.mAP"), [0.3, 0.5]);
}

#[test]
fn detection_logs_mmdet_2_and_3_pick_loss_and_number_by_global_step() {
    // mmdet 2.x (mmcv's TextLoggerHook): `Epoch [e][i/len]\t` then `, `-separated pairs,
    // `loss` last, after the sub-losses and `acc`.
    let r = one("2023-01-01 00:00:00,000 - mmdet - INFO - Epoch [2][50/7330]\tlr: 1.978e-03, eta: 1 day, 0:12:00, time: 0.512, data_time: 0.051, memory: 3000, loss_rpn_cls: 0.5012, loss_rpn_bbox: 0.1003, loss_cls: 1.0201, acc: 90.1000, loss_bbox: 0.3004, loss: 1.9220");
    assert_eq!(
        names(&r),
        [
            "train.lr",
            "train.loss_rpn_cls",
            "train.loss_rpn_bbox",
            "train.loss_cls",
            "train.acc",
            "train.loss_bbox",
            "train.loss"
        ]
    );
    // Epochs and iterations count from 1: the global step is (2 − 1) × 7330 + 50.
    assert_eq!(
        (step(&r), r.get("train.loss")),
        ((Some(2), Some(7380)), Some(1.922))
    );
    // mmdet 3.x (mmengine's LogProcessor): two-space separated, `loss` first.
    let r = one("11/28 10:00:00 - mmengine - INFO - Epoch(train)  [1][ 50/500]  base_lr: 1.0000e-02 lr: 1.0000e-02  eta: 0:10:00  time: 0.5000  data_time: 0.1000  memory: 3000  grad_norm: 5.0000  loss: 1.8000  loss_rpn_cls: 0.5000  loss_rpn_bbox: 0.1000  loss_cls: 0.8000  acc: 85.0000  loss_bbox: 0.4000");
    assert_eq!(
        (step(&r), r.get("train.loss")),
        ((Some(1), Some(50)), Some(1.8))
    );
    assert_eq!(r.get("train.loss_cls"), Some(0.8));
    assert_eq!(r.get("train.time"), None);
    assert_eq!(r.get("train.data_time"), None);
    // Iteration-based training: the counter is the step.
    let r = one("Iter(train) [ 2000/90000]  lr: 2.0000e-02  eta: 9:00:00  time: 0.3000  data_time: 0.0100  memory: 2000  loss: 0.9000");
    assert_eq!(
        (step(&r), r.get("train.loss")),
        ((None, Some(2000)), Some(0.9))
    );
    // Evaluation: mmdet 2.x's and 3.x's results under the COCO summary's names.
    let r = one("2023-01-01 01:00:00,000 - mmdet - INFO - Epoch(val) [3][625]\tbbox_mAP: 0.3740, bbox_mAP_50: 0.5810, bbox_mAP_75: 0.4040, bbox_mAP_s: 0.2150, bbox_mAP_m: 0.4100, bbox_mAP_l: 0.4810, bbox_mAP_copypaste: 0.374 0.581 0.404 0.215 0.410 0.481, segm_mAP: 0.3410, segm_mAP_50: 0.5520");
    assert_eq!(
        r.metrics,
        [
            ("val.mAP".to_owned(), 0.374),
            ("val.AP50".to_owned(), 0.581),
            ("val.AP75".to_owned(), 0.404),
            ("val.APs".to_owned(), 0.215),
            ("val.APm".to_owned(), 0.41),
            ("val.APl".to_owned(), 0.481),
            ("val.segm_mAP".to_owned(), 0.341),
            ("val.segm_AP50".to_owned(), 0.552)
        ]
    );
    assert_eq!(r.epoch, Some(3));
    let r = one("11/28 10:30:00 - mmengine - INFO - Epoch(val) [1][500/500]    coco/bbox_mAP: 0.3740  coco/bbox_mAP_50: 0.5810  coco/bbox_mAP_75: 0.4040  data_time: 0.0100  time: 0.0500");
    assert_eq!(names(&r), ["val.mAP", "val.AP50", "val.AP75"], "{r:?}");
    // VOC's mAP (at IoU 0.5) keeps mmdet's name.
    assert_eq!(
        names(&one("Epoch(val) [4][619]\tAP50: 0.7150, mAP: 0.7150")),
        ["val.AP50", "val.mAP"]
    );
    // Lines with nothing to compare: an evaluation step, a training line without a loss.
    for l in [
        "Epoch(val)  [1][ 50/500]    eta: 0:00:10  time: 0.0500  data_time: 0.0100  memory: 300",
        "Epoch: [0]  [ 0/12]  eta: 0:00:12  lr: 0.000200  time: 1.0000  data: 0.5000",
    ] {
        assert_eq!(parse_line(l.as_bytes()), LineParse::Skipped, "{l}");
    }
}

#[test]
fn detection_logs_torchvision_reference_and_hostile_lines() {
    // torchvision's detection reference on a CPU (no `max mem`), tab-delimited logger.
    let r = one("Epoch: [3]\t[ 40/100]\teta: 0:00:30\tlr: 0.020000\tloss: 1.2345 (1.3021)\tloss_classifier: 0.4000 (0.4100)\tloss_box_reg: 0.3000 (0.3100)\tloss_objectness: 0.2000 (0.2100)\tloss_rpn_box_reg: 0.1000 (0.1100)\ttime: 0.5000\tdata: 0.0100");
    assert_eq!(step(&r), (Some(3), Some(340)));
    assert_eq!(r.get("train.loss"), Some(1.2345));
    assert_eq!(r.get("train.loss_classifier"), Some(0.4));
    // Its evaluation's averages are timings only: nothing to compare.
    let (recs, _) = read_text("Test:  [ 0/50]  eta: 0:00:10  model_time: 0.2000 (0.2000)  evaluator_time: 0.0100 (0.0100)  time: 0.3000  data: 0.0100\nAveraged stats: model_time: 0.2100 (0.2050)  evaluator_time: 0.0110 (0.0105)\n");
    assert!(recs.is_empty(), "{recs:?}");
    // Hostile lines are read in linear time.
    let start = std::time::Instant::now();
    for unit in [
        "] eta: ",
        "[1/2]  eta: loss: 1 (",
        "Average Precision @[ IoU=",
        "Epoch [1][",
        "Averaged stats: loss: 1 (2) ",
    ] {
        let line = unit.repeat((4 << 20) / unit.len());
        let _ = parse_line(line.as_bytes());
    }
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
}
