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
    // mmdetection: the sub-losses and `loss`, each by its printed name.
    let r = one("2023-01-01 00:00:00,000 - mmdet - INFO - Epoch [1][50/7330]\tlr: 1.978e-03, eta: 1 day, 0:12:00, time: 0.512, data_time: 0.051, memory: 3000, loss_rpn_cls: 0.5012, loss_rpn_bbox: 0.1003, loss_cls: 1.0201, acc: 90.1, loss_bbox: 0.3004, loss: 1.9220");
    assert_eq!(
        names(&r),
        [
            "loss_rpn_cls",
            "loss_rpn_bbox",
            "loss_cls",
            "loss_bbox",
            "loss"
        ]
    );
    assert_eq!(
        (step(&r), r.get("loss")),
        ((Some(1), Some(50)), Some(1.922))
    );
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
