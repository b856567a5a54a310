//! Writer tests: the exact tcap line shapes, the ModelZoo loss.py regexes on our output,
//! verbosity, rank handling, flushing, and errors.

use std::io::Write;
use std::sync::{Arc, Mutex};

use dllogger::{
    rank_from_vars, JsonStreamBackend, LineParse, Logger, Metadata, StdOutBackend, Value, Verbosity,
};

/// A writer tests can read back while the logger still holds it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);
impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

fn stdout_logger(v: Verbosity) -> (Logger, Shared) {
    let s = Shared::default();
    let l = Logger::new(vec![Box::new(StdOutBackend::with_writer(
        v,
        Box::new(s.clone()),
    ))]);
    (l, s)
}

const DT: &str = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?";

#[test]
fn stdout_line_has_tcaps_exact_shape() {
    let (log, out) = stdout_logger(Verbosity::Default);
    let mut log_ranked = log.with_rank(Some(1));
    log_ranked.metadata("train.ips", Metadata::new().with_unit("imgs/s"));
    log_ranked.log(
        (0, 3),
        &[
            ("train.loss", 0.5533216595649719.into()),
            ("train.ips", 23350.335421016007.into()),
        ],
        Verbosity::Default,
    );
    log_ranked.log(
        (1, 2, 7),
        &[("val.top1", 76.0.into()), ("n", 3i64.into())],
        Verbosity::Default,
    );
    log_ranked.log(4, &[("val.top1", 0.5f32.into())], Verbosity::Default);
    log_ranked.log("Summary", &[("note", "done".into())], Verbosity::Default);
    log_ranked.info("plain text");
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    let want = [
        format!(
            r"^TCAPPDLL {DT} - Epoch: 0 Iteration: 3  rank : 1  train\.loss : 0\.5533216595649719  train\.ips : 23350\.335421016007 imgs/s$"
        ),
        format!(
            r"^TCAPPDLL {DT} - Epoch: 1 Iteration: 2 Validation Iteration: 7  rank : 1  val\.top1 : 76\.0  n : 3 $"
        ),
        format!(r"^TCAPPDLL {DT} - Epoch: 4  rank : 1  val\.top1 : 0\.5 $"),
        format!(r"^TCAPPDLL {DT} - Summary rank : 1  note : done $"),
        "^plain text$".to_owned(),
    ];
    assert_eq!(lines.len(), want.len(), "{text}");
    for (l, w) in lines.iter().zip(&want) {
        assert!(regex::Regex::new(w).unwrap().is_match(l), "{l:?} !~ {w}");
    }
}

#[test]
fn loss_py_regexes_extract_every_logged_loss() {
    let (log, out) = stdout_logger(Verbosity::Default);
    let mut log = log.with_rank(Some(0));
    let mut logged = Vec::new();
    for i in 0..200u64 {
        // Synthetic losses across magnitudes, including ones Python writes with exponents.
        let loss = (1.0 + (i as f64 * 0.37).sin()) * 10f64.powi((i % 9) as i32 - 6);
        logged.push(loss);
        log.log(
            (i / 50, i % 50),
            &[("train.loss", loss.into()), ("train.ips", 1234.5.into())],
            Verbosity::Default,
        );
    }
    let text = out.text();
    let re1 = regex::Regex::new(r"rank : 0  train.loss : ([\d\.e-]+)").unwrap();
    let got1: Vec<f64> = re1
        .captures_iter(&text)
        .map(|c| c[1].parse().unwrap())
        .collect();
    assert_eq!(got1, logged);
    let re2 = regex::Regex::new(
        r"train\.(?:loss|loss_avg)\s*:\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)",
    )
    .unwrap();
    let got2: Vec<f64> = text
        .lines()
        .filter_map(|l| re2.captures(l))
        .map(|c| c[1].parse().unwrap())
        .collect();
    assert_eq!(got2, logged);
}

#[test]
fn rank_from_data_wins_and_none_disables() {
    let (log, out) = stdout_logger(Verbosity::Default);
    let mut log = log.with_rank(Some(5));
    log.log(
        (0, 1),
        &[("rank", 2.0.into()), ("train.loss", 1.0.into())],
        Verbosity::Default,
    );
    let mut log = log.with_rank(None);
    log.log((0, 2), &[("train.loss", 1.0.into())], Verbosity::Default);
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].ends_with("Iteration: 1  rank : 2  train.loss : 1.0 "),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with("Iteration: 2  train.loss : 1.0 "),
        "{}",
        lines[1]
    );
}

#[test]
fn verbosity_filters_like_tcap() {
    let s = Shared::default();
    let d = Shared::default();
    let o = Shared::default();
    let mut log = Logger::new(vec![
        Box::new(StdOutBackend::with_writer(
            Verbosity::Default,
            Box::new(s.clone()),
        )),
        Box::new(JsonStreamBackend::with_writer(
            Verbosity::Verbose,
            Box::new(d.clone()),
        )),
        Box::new(StdOutBackend::with_writer(
            Verbosity::Off,
            Box::new(o.clone()),
        )),
    ]);
    log.metadata("a", Metadata::new());
    log.log(0, &[("a", 1.0.into())], Verbosity::Default);
    log.log(0, &[("a", 2.0.into())], Verbosity::Verbose);
    log.log(0, &[("a", 3.0.into())], Verbosity::Off);
    log.info("hello");
    drop(log);
    assert_eq!(s.text().matches("TCAPPDLL").count(), 1);
    let json = d.text();
    assert_eq!(
        json.lines()
            .filter(|l| l.contains("\"type\": \"LOG\""))
            .count(),
        2
    );
    assert_eq!(
        json.lines()
            .filter(|l| l.contains("\"type\": \"METADATA\""))
            .count(),
        1
    );
    assert_eq!(json.lines().filter(|l| l.starts_with("INFO {")).count(), 1);
    assert_eq!(o.text(), "", "an Off backend writes nothing");
}

#[test]
fn json_stream_shape_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train.json");
    let mut log = Logger::new(vec![Box::new(
        JsonStreamBackend::create(Verbosity::Verbose, &path).unwrap(),
    )])
    .with_rank(Some(0));
    log.metadata(
        "train.ips",
        Metadata::new()
            .with_unit("imgs/s")
            .with_format(":.3f")
            .with_goal("MAXIMIZE")
            .with_stage("TRAIN"),
    );
    log.log(
        (0, 1),
        &[
            ("train.loss", 2.5.into()),
            ("train.ips", f64::NAN.into()),
            ("tag", "a\"b".into()),
        ],
        Verbosity::Default,
    );
    log.log("final", &[("val.top1", Value::Int(76))], Verbosity::Default);
    log.info("config: {\"lr\": 0.1}");
    drop(log); // flush on drop
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    let meta = regex::Regex::new(&format!(
        r#"^TCAPPDLL \{{"timestamp": "\d+\.?\d*", "elapsedtime": "[\d.e-]+", "datetime": "{DT}", "type": "METADATA", "metric": "train.ips", "metadata": \{{"unit": "imgs/s", "format": ":.3f", "GOAL": "MAXIMIZE", "STAGE": "TRAIN"\}}\}}$"#
    ))
    .unwrap();
    assert!(meta.is_match(lines[0]), "{}", lines[0]);
    let logl = regex::Regex::new(&format!(
        r#"^TCAPPDLL \{{"timestamp": "\d+\.?\d*", "datetime": "{DT}", "elapsedtime": "[\d.e-]+", "type": "LOG", "step": \[0, 1\], "data": \{{"rank": 0, "train.loss": 2.5, "train.ips": "nan", "tag": "a\\"b"\}}\}}$"#
    ))
    .unwrap();
    assert!(logl.is_match(lines[1]), "{}", lines[1]);
    assert!(
        lines[2].contains(r#""step": "final", "data": {"rank": 0, "val.top1": 76}}"#),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].starts_with("INFO {\"local_rank\": "),
        "{}",
        lines[3]
    );
    // Every line is valid JSON after its prefix (JSON has no NaN literal; we wrote a string).
    for l in &lines {
        let j = l.split_once(' ').unwrap().1;
        serde_json::from_str::<serde_json::Value>(j).unwrap_or_else(|e| panic!("{l}: {e}"));
    }
    let mut r = dllogger::open(&path).unwrap();
    let recs: Vec<_> = r.by_ref().collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].get("train.loss"), Some(2.5));
    assert!(recs[0].get("train.ips").unwrap().is_nan());
    assert_eq!(recs[1].get("val.top1"), Some(76.0));
    assert_eq!(r.metadata()["train.ips"].unit.as_deref(), Some("imgs/s"));
    assert_eq!((r.stats().metadata, r.stats().malformed), (2, 0));
}

#[test]
fn create_error_names_the_path() {
    let err = JsonStreamBackend::create(Verbosity::Default, "/nonexistent-dir/x/train.json")
        .err()
        .expect("creating under a missing directory fails")
        .to_string();
    assert!(err.contains("/nonexistent-dir/x/train.json"), "{err}");
}

#[test]
fn write_errors_are_kept_for_finish() {
    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("no space left"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut log = Logger::new(vec![Box::new(StdOutBackend::with_writer(
        Verbosity::Default,
        Box::new(Full),
    ))]);
    log.log(0, &[("a", 1.0.into())], Verbosity::Default); // does not panic or abort training
    let err = log.finish().unwrap_err().to_string();
    assert!(err.contains("no space left"), "{err}");
}

#[test]
fn rank_rule_follows_tcap() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    assert_eq!(rank_from_vars(env(&[])), None);
    assert_eq!(
        rank_from_vars(env(&[("LOCAL_RANK", "3")])),
        None,
        "no WORLD_SIZE: not distributed"
    );
    assert_eq!(
        rank_from_vars(env(&[("WORLD_SIZE", "1"), ("LOCAL_RANK", "3")])),
        Some(0)
    );
    assert_eq!(
        rank_from_vars(env(&[("WORLD_SIZE", "4"), ("LOCAL_RANK", "3")])),
        Some(3)
    );
    assert_eq!(
        rank_from_vars(env(&[
            ("PADDLE_TRAINERS_NUM", "2"),
            ("PADDLE_TRAINER_ID", "1")
        ])),
        Some(1)
    );
    assert_eq!(rank_from_vars(env(&[("WORLD_SIZE", "4")])), Some(0));
    assert_eq!(
        rank_from_vars(env(&[("WORLD_SIZE", "4"), ("LOCAL_RANK", "x")])),
        None
    );
}

#[test]
fn written_lines_parse_as_records() {
    let (log, out) = stdout_logger(Verbosity::Default);
    let mut log = log.with_rank(Some(2));
    log.log((3, 4), &[("train.loss", 1e-7.into())], Verbosity::Default);
    let text = out.text();
    let LineParse::Records(r) = dllogger::parse_line(text.trim_end().as_bytes()) else {
        panic!("{text}")
    };
    assert_eq!(
        (r[0].epoch, r[0].iteration, r[0].rank),
        (Some(3), Some(4), 2)
    );
    assert_eq!(r[0].get("train.loss"), Some(1e-7));
}

/// The text after `TCAPPDLL <datetime> - `, byte for byte as tcap_dllogger's `format_step` and
/// `default_metric_format` print the same calls (expected strings produced by running them).
#[test]
fn stdout_bytes_equal_tcaps_for_the_same_calls() {
    let (log, out) = stdout_logger(Verbosity::Default);
    let mut log = log.with_rank(None);
    log.metadata("train.ips", Metadata::new().with_unit("imgs/s"));
    log.metadata("val.top1", Metadata::new().with_unit("%"));
    log.log(
        (0, 3),
        &[
            ("rank", 1i64.into()),
            ("train.loss", 0.5533216595649719.into()),
            ("train.ips", 23350.335421016007.into()),
        ],
        Verbosity::Default,
    );
    log.log(
        (1, 2, 7),
        &[
            ("rank", 0i64.into()),
            ("val.top1", 76.0.into()),
            ("n", 3i64.into()),
        ],
        Verbosity::Default,
    );
    log.log(
        4,
        &[
            ("rank", 2i64.into()),
            ("val.top1", 1e-05.into()),
            ("x", 1e16.into()),
        ],
        Verbosity::Default,
    );
    log.log(
        "Summary",
        &[
            ("rank", 0i64.into()),
            ("note", "done".into()),
            ("val.top1", f64::NAN.into()),
        ],
        Verbosity::Default,
    );
    let want = [
        "Epoch: 0 Iteration: 3  rank : 1  train.loss : 0.5533216595649719  train.ips : 23350.335421016007 imgs/s",
        "Epoch: 1 Iteration: 2 Validation Iteration: 7  rank : 0  val.top1 : 76.0 % n : 3 ",
        "Epoch: 4  rank : 2  val.top1 : 1e-05 % x : 1e+16 ",
        "Summary rank : 0  note : done  val.top1 : nan %",
    ];
    let text = out.text();
    let got: Vec<&str> = text
        .lines()
        .map(|l| l.split_once(" - ").expect("prefix").1)
        .collect();
    assert_eq!(got, want);
}
