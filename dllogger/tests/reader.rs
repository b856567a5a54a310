//! Reader tests: our own fixtures reproducing each quirk, the real ModelZoo logs (when present),
//! and bad input.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use dllogger::{parse_line, LineParse, LogFormat, LogReader, Record};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// `<repo root>/../shared/fixtures/tecorigin-modelzoo/<rel>`, or None (the test then skips).
fn shared_fixture(rel: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/tecorigin-modelzoo")
        .join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipping: shared fixture {} is absent", p.display());
        None
    }
}

fn read_all(bytes: &[u8]) -> (Vec<Record>, dllogger::ReadStats) {
    let mut r = LogReader::new(Cursor::new(bytes.to_vec()));
    let recs: Vec<Record> = r.by_ref().collect();
    assert!(r.error().is_none());
    (recs, r.stats().clone())
}

fn check_invariant(s: &dllogger::ReadStats) {
    assert_eq!(
        s.lines,
        s.record_lines + s.metadata + s.skipped + s.malformed,
        "{s:?}"
    );
}

#[test]
fn own_stdout_fixture_every_rank_and_glued_line() {
    let mut r = dllogger::open(&fixture("tcap_stdout_4ranks.log")).unwrap();
    let recs: Vec<Record> = r.by_ref().collect();
    let want: Vec<(u64, u32, f64, f64)> =
        std::fs::read_to_string(fixture("tcap_stdout_4ranks.expected"))
            .unwrap()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                    f[3].parse().unwrap(),
                )
            })
            .collect();
    assert_eq!(recs.len(), 16);
    for (rec, (it, rank, loss, ips)) in recs.iter().zip(&want) {
        assert_eq!(rec.epoch, Some(0));
        assert_eq!(rec.iteration, Some(*it));
        assert_eq!(rec.val_iteration, None);
        assert_eq!(rec.rank, *rank);
        assert_eq!(rec.get("train.loss"), Some(*loss));
        assert_eq!(rec.get("train.ips"), Some(*ips));
        assert_eq!(rec.metrics.len(), 2, "rank is not a metric: {rec:?}");
    }
    let s = r.stats();
    check_invariant(s);
    assert_eq!(s.malformed, 0, "{s:?}");
    assert_eq!(s.records, 16);
    assert_eq!(s.formats.get(LogFormat::TcapStdout), 16);
    assert_eq!(s.record_lines, 14, "two glued lines hold two records each");
    assert!(s.skipped >= 25, "banners, warnings, launch command: {s:?}");
    assert_eq!(
        s.bytes,
        std::fs::metadata(fixture("tcap_stdout_4ranks.log"))
            .unwrap()
            .len()
    );
}

#[test]
fn own_tcap_json_fixtures() {
    for (name, rank) in [("tcap_norank.json", 0), ("tcap_rank.json", 2)] {
        let mut r = dllogger::open(&fixture(name)).unwrap();
        let recs: Vec<Record> = r.by_ref().collect();
        assert_eq!(recs.len(), 5, "{name}");
        for (i, rec) in recs.iter().enumerate() {
            assert_eq!((rec.epoch, rec.iteration), (Some(0), Some(i as u64)));
            assert_eq!(rec.rank, rank);
            assert_eq!(rec.get("train.loss"), Some(2.0 - i as f64 * 0.125));
            assert_eq!(rec.get("train.ips"), Some(500.0 + i as f64));
        }
        let s = r.stats();
        check_invariant(s);
        assert_eq!((s.metadata, s.malformed, s.skipped), (2, 0, 0));
        assert_eq!(s.formats.tcap_json, 5);
        assert_eq!(r.metadata()["train.ips"].unit.as_deref(), Some("imgs/s"));
        assert_eq!(r.metadata()["train.loss"].goal.as_deref(), Some("MINIMIZE"));
    }
}

#[test]
fn own_nvidia_fixture() {
    let mut r = dllogger::open(&fixture("nvidia_dlll.json")).unwrap();
    let recs: Vec<Record> = r.by_ref().collect();
    assert_eq!(recs.len(), 4, "{recs:?}");
    assert_eq!((recs[0].epoch, recs[0].iteration), (Some(0), Some(10)));
    assert_eq!(recs[0].get("train.loss"), Some(6.5));
    assert!(recs[1].get("train.loss").unwrap().is_nan());
    assert_eq!(recs[1].get("train.ips"), Some(f64::INFINITY));
    assert_eq!(recs[2].val_iteration, Some(5));
    assert_eq!(recs[3].epoch, None);
    assert_eq!(recs[3].metrics, vec![("val.top1".to_owned(), 0.75)]);
    let s = r.stats();
    check_invariant(s);
    assert_eq!((s.metadata, s.malformed), (3, 0));
    assert_eq!(s.formats.nvidia_dlll, 4);
    assert_eq!(r.metadata()["train.ips"].unit.as_deref(), Some("images/s"));
}

#[test]
fn real_demo_sdaa_log() {
    let Some(p) = shared_fixture("demo/sdaa.log") else {
        return;
    };
    let text = std::fs::read_to_string(&p).unwrap();
    let mut r = dllogger::open(&p).unwrap();
    let recs: Vec<Record> = r.by_ref().collect();
    // Every `train.loss : x` occurrence in the file, in order, is a record's loss.
    let re = regex::Regex::new(r"rank : (\d+)  train\.loss : ([\d\.e-]+)").unwrap();
    let want: Vec<(u32, f64)> = re
        .captures_iter(&text)
        .map(|c| (c[1].parse().unwrap(), c[2].parse().unwrap()))
        .collect();
    assert_eq!(want.len(), 32, "iterations 0-7 of 4 ranks");
    let got: Vec<(u32, f64)> = recs
        .iter()
        .map(|r| (r.rank, r.get("train.loss").unwrap()))
        .collect();
    assert_eq!(got, want);
    assert!(recs
        .iter()
        .all(|r| r.epoch == Some(0) && r.get("train.ips").is_some()));
    for rank in 0..4 {
        let its: Vec<u64> = recs
            .iter()
            .filter(|r| r.rank == rank)
            .map(|r| r.iteration.unwrap())
            .collect();
        assert_eq!(its, (0..8).collect::<Vec<_>>(), "rank {rank}");
    }
    let s = r.stats();
    check_invariant(s);
    assert_eq!(s.malformed, 0);
    assert_eq!(s.records, 32);
    assert_eq!(s.lines, text.lines().count() as u64);
}

#[test]
fn real_facial_expression_json() {
    let re = regex::Regex::new(r"'train\.loss': '([^']+)'").unwrap();
    for (name, n) in [("cuda_loss.json", 20), ("sdaa_loss.json", 20)] {
        let Some(p) = shared_fixture(&format!("facial-expression-recognition/{name}")) else {
            return;
        };
        let text = std::fs::read_to_string(&p).unwrap();
        let mut r = dllogger::open(&p).unwrap();
        let recs: Vec<Record> = r.by_ref().collect();
        assert_eq!(recs.len(), n, "{name}");
        let want: Vec<f64> = re
            .captures_iter(&text)
            .map(|c| c[1].parse().unwrap())
            .collect();
        let got: Vec<f64> = recs.iter().map(|r| r.get("train.loss").unwrap()).collect();
        assert_eq!(got, want);
        for (i, rec) in recs.iter().enumerate() {
            assert_eq!(
                (rec.epoch, rec.iteration, rec.rank),
                (Some(0), Some(i as u64), 0)
            );
        }
        let s = r.stats();
        check_invariant(s);
        assert_eq!(s.malformed, 0);
        assert_eq!(s.formats.tcap_json, n as u64);
        assert_eq!(r.metadata()["train.ips"].unit.as_deref(), Some("imgs/s"));
    }
}

#[test]
fn our_json_with_numbers_and_nonfinite_strings() {
    let line = br#"TCAPPDLL {"timestamp": "1.5", "datetime": "x", "elapsedtime": "0.1", "type": "LOG", "step": [1, 2, 3], "data": {"rank": 3, "train.loss": 1e-05, "train.ips": "nan", "x": "inf", "y": -Infinity, "lr": "0.1", "name": "resnet", "flag": true, "arr": [1, 2], "obj": {"a": 1}}}"#;
    let LineParse::Records(recs) = parse_line(line) else {
        panic!("not a record")
    };
    let r = &recs[0];
    assert_eq!(
        (r.epoch, r.iteration, r.val_iteration, r.rank),
        (Some(1), Some(2), Some(3), 3)
    );
    assert_eq!(r.get("train.loss"), Some(1e-05));
    assert!(r.get("train.ips").unwrap().is_nan());
    assert_eq!(r.get("x"), Some(f64::INFINITY));
    assert_eq!(r.get("y"), Some(f64::NEG_INFINITY));
    assert_eq!(r.get("lr"), Some(0.1));
    let names: Vec<&str> = r.metrics.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["train.loss", "train.ips", "x", "y", "lr"]);
}

#[test]
fn tcap_repr_oddities() {
    // tensor values (str(tensor)) and double-quoted repr strings inside the Python dict.
    let line = br#"TCAPPDLL {"type": "LOG", "step": "Summary", "data": "{'rank': '1', 'train.loss': \"tensor(0.5, device='sdaa:0')\", \"it's\": '2', 'val.top1': 'None'}"}"#;
    let LineParse::Records(recs) = parse_line(line) else {
        panic!("not a record")
    };
    assert_eq!(recs[0].rank, 1);
    assert_eq!(recs[0].epoch, None);
    assert_eq!(
        recs[0].metrics,
        vec![("train.loss".into(), 0.5), ("it's".into(), 2.0)]
    );
}

#[test]
fn stdout_variants() {
    type Want<'a> = (Option<u64>, Option<u64>, Option<u64>, u32, &'a str, f64);
    let cases: &[(&[u8], Want)] = &[
        (b"TCAPPDLL 2025-05-15 14:20:10 - Epoch: 2 Iteration: 7 Validation Iteration: 3  rank : 1  val.loss : 0.25 ",
            (Some(2), Some(7), Some(3), 1, "val.loss", 0.25)),
        (b"TCAPPDLL 2025-05-15 14:20:10.1 - Epoch: 4  val.top1 : 76.5 %",
            (Some(4), None, None, 0, "val.top1", 76.5)),
        (b"TCAPPDLL 2025-05-15 14:20:10.1 - Training summary  train.loss : nan ",
            (None, None, None, 0, "train.loss", f64::NAN)),
        (b"INFO - 2025-01-01 00:00:00,123 - base_task - TCAPPDLL 2025-01-01 00:00:00.1 - Epoch: 0 Iteration: 1 rank: 0 train.loss_avg: 13.58 device : cuda:0",
            (Some(0), Some(1), None, 0, "train.loss_avg", 13.58)),
    ];
    for (line, want) in cases {
        let got = parse_line(line);
        let (e, i, v, rank, m, val) = want;
        let LineParse::Records(recs) = got else {
            panic!("{:?}: {got:?}", String::from_utf8_lossy(line))
        };
        let r = &recs[0];
        assert_eq!(
            (r.epoch, r.iteration, r.val_iteration, r.rank),
            (*e, *i, *v, *rank)
        );
        let x = r.get(m).unwrap();
        assert!(x == *val || (x.is_nan() && val.is_nan()), "{r:?}");
        assert!(
            r.get("cuda").is_none() && r.get("device").is_none(),
            "{r:?}"
        );
    }
}

#[test]
fn noise_is_skipped_and_cut_lines_are_malformed() {
    let skipped: &[&[u8]] = &[
        b"",
        b"W0515 14:20:08.430000 140114268497728 torch/distributed/run.py:779] *****",
        b"2024/01/01 12:00:00 - mmengine - INFO - Epoch(train) [1][50/500]  lr: 1.0e-04  eta: 0:10:00",
        b"{'model': 'resnet50', 'lr': 0.1}",
        b"criterion = nn.CrossEntropyLoss(); --loss 2 /tmp/loss 3 loss function: MSE",
        b" TCCL         | 1.23.0b0 (/opt/tecoai/lib64/libtccl.so)",
        b"INFO {not json",
    ];
    for l in skipped {
        assert_eq!(
            parse_line(l),
            LineParse::Skipped,
            "{}",
            String::from_utf8_lossy(l)
        );
    }
    let malformed: &[&[u8]] = &[
        b"TCAPPDLL {\"timestamp\": \"1751620651.9392",
        b"TCAPPDLL 2025-05-15 14:20:10.9",
        b"TCAPPDLL 2025-05-15 14:20:10.940069 - Epoch: 0 Iteration: 7  rank : 1  train.loss :",
        b"TCAPPDLL 2025-05-15 14:20:10.940069 - Epoch: x Iteration: 7  train.loss : 1",
        b"DLLL {\"type\": \"LOG\", \"step\": [0, 1], \"data\": {\"loss\": 1.0",
        b"INFO {\"local_rank\": 0, \"datetime\": ",
    ];
    for l in malformed {
        assert_eq!(
            parse_line(l),
            LineParse::Malformed,
            "{}",
            String::from_utf8_lossy(l)
        );
    }
}

#[test]
fn plain_loss_fallback() {
    let LineParse::Records(r) = parse_line(b"epoch 3 step 10 loss 1.234 acc 0.5") else {
        panic!()
    };
    assert_eq!(r[0].metrics, vec![("loss".to_owned(), 1.234)]);
    assert_eq!(r[0].rank, 0);
    // The words before `loss` number it, so such lines pair by step.
    assert_eq!((r[0].epoch, r[0].iteration), (Some(3), Some(10)));
    let LineParse::Records(r) = parse_line(b"Epoch[2] iter: 7, loss 0.25") else {
        panic!()
    };
    assert_eq!((r[0].epoch, r[0].iteration), (Some(2), Some(7)));
    let LineParse::Records(r) = parse_line(b"train loss 0.25") else {
        panic!()
    };
    assert_eq!((r[0].epoch, r[0].iteration), (None, None));
    let mut rd = LogReader::new(Cursor::new(b"loss 0.5\nloss abc\n".to_vec()));
    assert_eq!(rd.next_tagged().unwrap().0, LogFormat::PlainLoss);
    assert!(rd.next().is_none());
    assert_eq!(rd.stats().skipped, 1);
}

#[test]
fn bad_input_crlf_utf8_truncated_nan() {
    let mut data = Vec::new();
    data.extend_from_slice(b"TCAPPDLL 2025-05-15 14:20:10.1 - Epoch: 0 Iteration: 0  rank : 0  train.loss : 0.5  train.ips : 10.0 imgs/s\r\n");
    data.extend_from_slice(b"\xff\xfe garbage \xc3\x28 not utf-8\r\n");
    data.extend_from_slice(b"TCAPPDLL 2025-05-15 14:20:10.2 - Epoch: 0 Iteration: 1  rank : 0  tr\xffin.loss : inf  x : -inf  y : NaN \r\n");
    data.extend_from_slice(
        br#"TCAPPDLL {"type": "LOG", "step": [0, 2], "data": "{'train.loss': 'nan'}"}"#,
    );
    data.extend_from_slice(b"\r\n");
    data.extend_from_slice(b"TCAPPDLL {\"timestamp\": \"17516206"); // truncated last line
    let (recs, s) = read_all(&data);
    check_invariant(&s);
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[0].get("train.ips"), Some(10.0));
    assert_eq!(recs[1].get("tr\u{FFFD}in.loss"), Some(f64::INFINITY));
    assert_eq!(recs[1].get("x"), Some(f64::NEG_INFINITY));
    assert!(recs[1].get("y").unwrap().is_nan());
    assert!(recs[2].get("train.loss").unwrap().is_nan());
    assert_eq!((s.lines, s.skipped, s.malformed), (5, 1, 1));
    assert_eq!(s.bytes, data.len() as u64);
}

#[test]
fn overlong_lines_are_malformed_not_buffered() {
    let mut data = b"loss 1.0\n".to_vec();
    data.extend(std::iter::repeat_n(b'x', 5000));
    data.extend_from_slice(b"\nloss 2.0\n");
    data.extend(std::iter::repeat_n(b'y', 5000)); // overlong last line, no newline
                                                  // A small BufReader so the long lines span many buffer fills.
    let r = LogReader::new(std::io::BufReader::with_capacity(
        64,
        Cursor::new(data.clone()),
    ))
    .with_max_line(1000);
    let mut r = r;
    let losses: Vec<f64> = r.by_ref().map(|r| r.get("loss").unwrap()).collect();
    assert_eq!(losses, [1.0, 2.0]);
    let s = r.stats();
    assert_eq!((s.lines, s.malformed, s.records), (4, 2, 2));
    assert_eq!((s.overlong, s.overlong_unread), (2, 2));
    assert_eq!(s.bytes, data.len() as u64);
}

/// tqdm redraws its bar with `\r` on one physical line: a record printed after megabytes of
/// progress is read from the text after the last `\r`, in bounded memory, whatever the
/// buffer boundaries; the long lines are counted.
#[test]
fn overlong_lines_are_read_after_their_last_cr() {
    let record = |it: u64| {
        format!("TCAPPDLL 2025-05-15 14:20:10.9 - Epoch: 0 Iteration: {it}  rank : 0  train.loss : {}.5", it)
    };
    let progress = |n: usize| -> Vec<u8> {
        let mut p = Vec::new();
        for i in 0..n {
            p.extend_from_slice(
                format!(
                    "\r{:3}%|{}| {i}/100 [00:01<00:01, 44.1it/s]",
                    i % 100,
                    "#".repeat(i % 40)
                )
                .as_bytes(),
            );
        }
        p
    };
    let mut data = Vec::new();
    // 1: progress then the record, the record right after the last `\r`.
    data.extend(progress(400));
    data.extend_from_slice(b"\r");
    data.extend_from_slice(record(1).as_bytes());
    data.push(b'\n');
    // 2: the same with CRLF line ends: the `\r` before `\n` is not a segment start.
    data.extend(progress(400));
    data.extend_from_slice(b"\r");
    data.extend_from_slice(record(2).as_bytes());
    data.extend_from_slice(b"\r\n");
    // 3: the record printed over the bar (no `\r` between them).
    data.extend(progress(400));
    data.extend_from_slice(record(3).as_bytes());
    data.push(b'\n');
    // 4: the last segment itself over the limit: unread, malformed.
    data.extend(progress(50));
    data.extend_from_slice(b"\r");
    data.extend(std::iter::repeat_n(b'z', 3000));
    data.extend_from_slice(record(4).as_bytes());
    data.push(b'\n');
    // 5: a short line is read whole, as before.
    data.extend_from_slice(record(5).as_bytes());
    data.push(b'\n');
    // 6: an overlong last line without `\n`, ending in CRs.
    data.extend(progress(400));
    data.extend_from_slice(b"\r");
    data.extend_from_slice(record(6).as_bytes());
    data.extend_from_slice(b"\r\r");
    for cap in [7usize, 64, 1000, 4096, 1 << 16] {
        let mut r = LogReader::new(std::io::BufReader::with_capacity(
            cap,
            Cursor::new(data.clone()),
        ))
        .with_max_line(2000);
        let its: Vec<(u64, f64)> = r
            .by_ref()
            .map(|r| (r.iteration.unwrap(), r.get("train.loss").unwrap()))
            .collect();
        assert_eq!(
            its,
            [(1, 1.5), (2, 2.5), (3, 3.5), (5, 5.5), (6, 6.5)],
            "buffer {cap}"
        );
        let s = r.stats();
        check_invariant(s);
        assert_eq!(
            (s.lines, s.overlong, s.overlong_unread),
            (6, 5, 1),
            "buffer {cap}: {s:?}"
        );
        assert_eq!((s.record_lines, s.malformed), (5, 1), "buffer {cap}: {s:?}");
        assert_eq!(s.bytes, data.len() as u64);
    }
}

#[test]
fn open_names_the_missing_file() {
    let err = match dllogger::open(Path::new("/nonexistent/dir/train.log")) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("opened a missing file"),
    };
    assert!(err.contains("/nonexistent/dir/train.log"), "{err}");
}

#[test]
fn io_error_is_reported_not_swallowed() {
    struct Failing(u8);
    impl std::io::Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                self.0 = 1;
                let l = b"loss 1.5\nloss 2";
                buf[..l.len()].copy_from_slice(l);
                Ok(l.len())
            } else {
                Err(std::io::Error::other("disk on fire"))
            }
        }
    }
    let mut r = LogReader::new(std::io::BufReader::new(Failing(0)));
    assert_eq!(r.try_next().unwrap().unwrap().get("loss"), Some(1.5));
    let err = r.try_next().unwrap_err().to_string();
    assert!(
        err.contains("disk on fire") && err.contains("<stream>"),
        "{err}"
    );
    assert!(r.next().is_none());
}

#[test]
fn marker_quoted_inside_json_is_not_a_record() {
    // `logger.info(a_log_line)` writes an INFO line whose text holds `TCAPPDLL ... : ...`.
    let info = br#"INFO {"local_rank": 0, "datetime": "2025-01-01 00:00:00.1", "type": "INFO", "data": "TCAPPDLL 2025-01-01 00:00:00.1 - Epoch: 0 Iteration: 1  train.loss : 9.0 "}"#;
    assert_eq!(parse_line(info), LineParse::Skipped);
    let (_, s) = read_all(info);
    assert_eq!((s.metadata, s.records), (1, 0));
    let tcap = br#"TCAPPDLL {"type": "LOG", "step": [0, 1], "data": {"train.loss": 1.0, "note": "TCAPPDLL x - a : 2"}}"#;
    let LineParse::Records(r) = parse_line(tcap) else {
        panic!()
    };
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].metrics, vec![("train.loss".to_owned(), 1.0)]);
}

/// Build-in models log one summary per epoch; its epoch is the step, and names repeated after
/// `|` are the validation values (`val_acc1`).
#[test]
fn epoch_summaries_read_with_the_epoch_as_the_step() {
    let path = fixture("epoch_summary.log");
    let mut r = dllogger::open(&path).unwrap();
    let mut recs = Vec::new();
    while let Some((format, rec)) = r.next_tagged() {
        assert_eq!(format, LogFormat::EpochSummary);
        recs.push(rec);
    }
    assert_eq!(recs.len(), 6);
    let names: Vec<&str> = recs[0].metrics.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "train_loss",
            "acc1",
            "acc5",
            "val_loss",
            "val_acc1",
            "val_acc5",
            "lr"
        ]
    );
    for (e, rec) in recs.iter().enumerate() {
        assert_eq!(
            (rec.epoch, rec.iteration, rec.rank),
            (Some(e as u64), None, 0)
        );
    }
    assert_eq!(recs[3].get("train_loss"), Some(1.3036));
    assert_eq!(recs[0].get("val_acc1"), Some(8.75));
    assert_eq!(recs[5].get("lr"), Some(0.01));
    let s = r.stats();
    check_invariant(s);
    assert_eq!((s.records, s.malformed), (6, 0));
    assert_eq!(s.formats.get(LogFormat::EpochSummary), 6);
    assert_eq!(
        s.formats.plain_loss, 0,
        "the summary is read once, not as `loss x`"
    );

    // A prefix before the label is allowed; a tqdm bar described `Epoch[3]` is not a summary,
    // nor is `Epoch[3] iter: 10, loss 1.2` (the plain `loss` fallback numbers that one).
    let LineParse::Records(r) =
        parse_line(b"2025-01-01 INFO Epoch[7]: iter 40, loss: 0.5, top1=71.5%")
    else {
        panic!("not read")
    };
    assert_eq!((r[0].epoch, r[0].iteration), (Some(7), Some(40)));
    assert_eq!(
        r[0].metrics,
        vec![("loss".to_owned(), 0.5), ("top1".to_owned(), 71.5)]
    );
    assert_eq!(
        parse_line(b"Epoch[3]: 100%|####| 50/50 [00:10<00:00, 4.9it/s]"),
        LineParse::Skipped
    );
    assert_eq!(parse_line(b"MyEpoch[3]: loss 1.0"), {
        LineParse::Records(vec![Record {
            epoch: None,
            iteration: None,
            val_iteration: None,
            rank: 0,
            step_name: None,
            metrics: vec![("loss".to_owned(), 1.0)],
        }])
    });
    let LineParse::Records(r) = parse_line(b"Epoch[3] iter: 10, loss 1.2") else {
        panic!("not read")
    };
    assert_eq!((r[0].epoch, r[0].iteration), (Some(3), Some(10)));
}

/// NLP models write `step,loss` CSV: the header is kept, rows under it are records; another
/// header replaces it; rows of another width are malformed.
#[test]
fn csv_logs_read_rows_under_their_header() {
    let mut r = dllogger::open(&fixture("loss.csv")).unwrap();
    let recs: Vec<Record> = r.by_ref().collect();
    assert_eq!(recs.len(), 12);
    for (i, rec) in recs.iter().enumerate() {
        let step = i as u64 + 1;
        assert_eq!((rec.epoch, rec.iteration), (None, Some(step)));
        let want: f64 = format!("{:.6}", 2.5 / (1.0 + step as f64 / 4.0))
            .parse()
            .unwrap();
        assert_eq!(rec.metrics, vec![("loss".to_owned(), want)]);
    }
    let s = r.stats();
    check_invariant(s);
    assert_eq!((s.metadata, s.skipped, s.malformed), (1, 1, 0));
    assert_eq!(s.formats.get(LogFormat::Csv), 12);

    let text = "epoch,step,loss,ppl\r\n0,1,2.5,12.2\r\n0,2,,11.0\r\nnot,a,row\r\n0,3,2.25\r\nTCAPPDLL 2025-05-15 14:20:10.1 - Epoch: 0 Iteration: 4  rank : 0  train.loss : 2.0\nstep,loss\n9,1.5\n";
    let (recs, s) = read_all(text.as_bytes());
    check_invariant(&s);
    type Row = (Option<u64>, Option<u64>, Vec<(String, f64)>);
    let got: Vec<Row> = recs
        .into_iter()
        .map(|r| (r.epoch, r.iteration, r.metrics))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                Some(0),
                Some(1),
                vec![("loss".to_owned(), 2.5), ("ppl".to_owned(), 12.2)]
            ),
            (Some(0), Some(2), vec![("ppl".to_owned(), 11.0)]),
            (Some(0), Some(4), vec![("train.loss".to_owned(), 2.0)]),
            (None, Some(9), vec![("loss".to_owned(), 1.5)]),
        ]
    );
    assert_eq!((s.metadata, s.malformed, s.skipped), (2, 1, 1), "{s:?}");
    assert_eq!(s.formats.csv, 3);
    // Without a header, numbers and commas are noise; `parse_line` alone never reads CSV.
    let (recs, _) = read_all(b"1,2.5\n2,2.25\n");
    assert!(recs.is_empty());
    // A header of more than 256 columns is not one (the reader's memory stays bounded).
    let wide = format!(
        "step,{}\n1,{}\n",
        (0..300)
            .map(|i| format!("m{i}"))
            .collect::<Vec<_>>()
            .join(","),
        vec!["1.0"; 300].join(",")
    );
    let (recs, _) = read_all(wide.as_bytes());
    assert!(recs.is_empty());
}

/// PARAMETER records say what the run computed; every format's shape is kept (first value
/// of each key, text as written), none of them is a record. A text step names the record.
#[test]
fn parameter_records_are_kept_in_every_format() {
    let text = concat!(
        // run_<model>'s JSON stream (the engine's PARAMETER line)
        "TCAPPDLL {\"timestamp\": \"1\", \"datetime\": \"d\", \"elapsedtime\": \"0\", \"type\": \"LOG\", \"step\": \"PARAMETER\", \"data\": {\"rank\": 0, \"batch_size\": 4, \"world_size\": 2, \"global_batch_size\": 8, \"parameters\": 11181642}}\n",
        // tcap_dllogger's JSON stream: data is a Python repr
        "TCAPPDLL {\"timestamp\": \"1\", \"datetime\": \"d\", \"elapsedtime\": \"0\", \"type\": \"LOG\", \"step\": \"PARAMETER\", \"data\": \"{'model_name': 'resnet20', 'lr': 0.1, 'autocast': True, 'batch_size': 99}\"}\n",
        // tcap stdout
        "TCAPPDLL 2025-05-15 14:20:10.1 - PARAMETER rank : 0  seed : 42  memory_format : nhwc \n",
        // NVIDIA dllogger
        "DLLL {\"timestamp\": \"1\", \"type\": \"PARAMETER\", \"data\": {\"precision\": \"amp\", \"note\": [1, 2]}}\n",
        "TCAPPDLL {\"timestamp\": \"2\", \"type\": \"LOG\", \"step\": \"FINISHED\", \"data\": {\"steps\": 100, \"world_size\": 2}}\n",
        "TCAPPDLL 2025-05-15 14:20:10.2 - TRAIN_END rank : 0  time : 5.0 \n",
    );
    let mut r = LogReader::new(Cursor::new(text.as_bytes().to_vec()));
    let recs: Vec<Record> = r.by_ref().collect();
    let p = r.parameters();
    let got: Vec<(&str, &str)> = p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        got,
        [
            ("autocast", "True"),
            ("batch_size", "4"),
            ("global_batch_size", "8"),
            ("lr", "0.1"),
            ("memory_format", "nhwc"),
            ("model_name", "resnet20"),
            ("note", "[1, 2]"),
            ("parameters", "11181642"),
            ("precision", "amp"),
            ("seed", "42"),
            ("world_size", "2"),
        ]
    );
    assert_eq!(recs.len(), 2, "{recs:?}");
    assert_eq!(recs[0].step_name.as_deref(), Some("FINISHED"));
    assert_eq!(recs[0].get("steps"), Some(100.0));
    assert_eq!(recs[1].step_name.as_deref(), Some("TRAIN_END"));
    let s = r.stats();
    check_invariant(s);
    assert_eq!((s.metadata, s.records, s.malformed), (4, 2, 0));

    // The NVIDIA fixture's two PARAMETER shapes (`"type": "PARAMETER"`, `"step": "PARAMETER"`).
    let mut r = dllogger::open(&fixture("nvidia_dlll.json")).unwrap();
    r.by_ref().for_each(drop);
    let p = r.parameters();
    assert_eq!(
        (
            p["batch_size"].as_str(),
            p["lr"].as_str(),
            p["epochs"].as_str()
        ),
        ("256", "0.1", "90")
    );

    // Bounded: at most MAX_PARAMETERS keys, values cut at 256 bytes (never inside a character).
    let mut many =
        String::from("TCAPPDLL {\"type\": \"LOG\", \"step\": \"PARAMETER\", \"data\": {");
    for i in 0..400 {
        many.push_str(&format!("\"k{i:03}\": \"{}\", ", "é".repeat(200)));
    }
    many.push_str("\"last\": 1}}\n");
    let mut r = LogReader::new(Cursor::new(many.into_bytes()));
    r.by_ref().for_each(drop);
    assert_eq!(r.parameters().len(), dllogger::MAX_PARAMETERS);
    assert!(r
        .parameters()
        .values()
        .all(|v| v.len() <= 256 && v.starts_with('é')));
}

/// Issue #38 C9: a FIFO or a device given as a log is refused at once, named, never opened for a
/// blocking read (`compare --baseline <fifo>` hung).
#[test]
fn a_fifo_or_a_device_as_a_log_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("cuda.log");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let p = fifo.clone();
    std::thread::spawn(move || {
        tx.send(dllogger::open(&p).map(drop).unwrap_err().to_string())
            .unwrap()
    });
    let err = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("blocked on a FIFO");
    assert!(
        err.contains(&fifo.display().to_string()) && err.contains("is a FIFO, not a regular file"),
        "{err}"
    );
    let err = dllogger::open(Path::new("/dev/zero"))
        .map(drop)
        .unwrap_err()
        .to_string();
    assert!(err.contains("a character device"), "{err}");
}
