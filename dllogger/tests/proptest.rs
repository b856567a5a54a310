//! Property tests of the line parser (run in `cargo test`): no panic on any bytes, the line
//! accounting always adds up, and what our writer writes the reader reads back exactly.

use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex};

use dllogger::{
    parse_line, JsonStreamBackend, LineParse, LogReader, Logger, StdOutBackend, Step, Value,
    Verbosity,
};
use proptest::prelude::*;

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

/// Bytes biased towards the formats' own tokens, so mutations reach deep parser states.
fn loggy_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(b"TCAPPDLL ".to_vec()),
        Just(b"DLLL ".to_vec()),
        Just(b"INFO {\"".to_vec()),
        Just(b"2025-05-15 14:20:10.934968 - ".to_vec()),
        Just(b"Epoch: ".to_vec()),
        Just(b"Iteration: ".to_vec()),
        Just(b"Validation Iteration: ".to_vec()),
        Just(b" : ".to_vec()),
        Just(b"rank".to_vec()),
        Just(b"loss ".to_vec()),
        Just(b"Loss: ".to_vec()),
        Just(b"loss=".to_vec()),
        Just(b"Loss_D: ".to_vec()),
        Just(b"{'loss': ".to_vec()),
        Just(b"[0/25][5/1563] ".to_vec()),
        Just(b" 45/100 [00:10<00:12, 4.5it/s, ".to_vec()),
        Just(b"Test set: Average ".to_vec()),
        Just(b"nan".to_vec()),
        Just(b"{\"type\": \"LOG\", \"step\": [0, 1], \"data\": ".to_vec()),
        Just(b"\"{'rank': '0', 'train.loss': '".to_vec()),
        Just(b"{\"a\": ".to_vec()),
        Just(b"NaN".to_vec()),
        Just(b"-Infinity".to_vec()),
        Just(b"tensor(".to_vec()),
        Just(b"\\u".to_vec()),
        Just(b"\\".to_vec()),
        Just(b"\"".to_vec()),
        Just(b"'".to_vec()),
        Just(b"[[[[".to_vec()),
        Just(b"}]".to_vec()),
        Just(b"\r".to_vec()),
        "[0-9.e+-]{1,12}".prop_map(|s| s.into_bytes()),
        proptest::collection::vec(any::<u8>(), 0..8),
    ];
    proptest::collection::vec(token, 0..24).prop_map(|v| v.concat())
}

fn metric_name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_.]{0,12}".prop_filter("rank is not a metric", |s| s != "rank")
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<f64>().prop_map(Value::Float),
        (-(1i64 << 52)..(1i64 << 52)).prop_map(Value::Int),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        any::<u32>().prop_map(|e| Step::Epoch(e as u64)),
        (any::<u32>(), any::<u32>()).prop_map(|(e, i)| Step::EpochIter(e as u64, i as u64)),
        (any::<u32>(), any::<u32>(), any::<u32>())
            .prop_map(|(e, i, v)| Step::EpochIterVal(e as u64, i as u64, v as u64)),
        "[A-Za-z_]{1,10}".prop_map(Step::Text),
    ]
}

fn as_f64(v: &Value) -> f64 {
    match v {
        Value::Float(x) => *x,
        Value::Int(i) => *i as f64,
        Value::Str(_) => unreachable!(),
    }
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan())
        || a.to_bits() == b.to_bits()
        || (a == 0.0 && b == 0.0 && a.is_sign_negative() == b.is_sign_negative())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn parse_line_never_panics_on_any_bytes(line in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = parse_line(&line);
    }

    #[test]
    fn parse_line_never_panics_on_loggy_bytes(line in loggy_bytes()) {
        if let LineParse::Records(r) = parse_line(&line) {
            prop_assert!(!r.is_empty());
            prop_assert!(r.iter().all(|r| !r.metrics.is_empty()));
        }
    }

    #[test]
    fn reader_accounting_adds_up(lines in proptest::collection::vec(loggy_bytes(), 0..20), cap in 8usize..200) {
        let data: Vec<u8> = lines.join(&b'\n');
        let mut r = LogReader::new(std::io::BufReader::with_capacity(16, Cursor::new(data.clone()))).with_max_line(cap);
        let n = r.by_ref().count() as u64;
        let s = r.stats();
        prop_assert_eq!(s.records, n);
        prop_assert_eq!(s.bytes, data.len() as u64);
        prop_assert_eq!(s.lines, s.record_lines + s.metadata + s.skipped + s.malformed);
    }

    #[test]
    fn what_we_write_reads_back_exactly(
        entries in proptest::collection::vec((step(), proptest::collection::btree_map(metric_name(), value(), 1..5), 0u32..64), 1..12)
    ) {
        let out = Shared::default();
        let json = Shared::default();
        let mut log = Logger::new(vec![
            Box::new(StdOutBackend::with_writer(Verbosity::Default, Box::new(out.clone()))),
            Box::new(JsonStreamBackend::with_writer(Verbosity::Default, Box::new(json.clone()))),
        ]);
        for (st, data, rank) in &entries {
            let mut d: Vec<(&str, Value)> = vec![("rank", Value::Int(*rank as i64))];
            d.extend(data.iter().map(|(k, v)| (k.as_str(), v.clone())));
            log.log(st.clone(), &d, Verbosity::Default);
        }
        drop(log);
        for (name, bytes) in [("stdout", out.0.lock().unwrap().clone()), ("json", json.0.lock().unwrap().clone())] {
            let mut r = LogReader::new(Cursor::new(bytes));
            let recs: Vec<_> = r.by_ref().collect();
            prop_assert_eq!(recs.len(), entries.len(), "{}", name);
            prop_assert_eq!(r.stats().malformed, 0);
            for (rec, (st, data, rank)) in recs.iter().zip(&entries) {
                let (e, i, v) = match st {
                    Step::Epoch(e) => (Some(*e), None, None),
                    Step::EpochIter(e, i) => (Some(*e), Some(*i), None),
                    Step::EpochIterVal(e, i, v) => (Some(*e), Some(*i), Some(*v)),
                    Step::Text(_) => (None, None, None),
                };
                prop_assert_eq!((rec.epoch, rec.iteration, rec.val_iteration, rec.rank), (e, i, v, *rank), "{}", name);
                prop_assert_eq!(rec.metrics.len(), data.len());
                for ((k, got), (wk, wv)) in rec.metrics.iter().zip(data) {
                    prop_assert_eq!(k, wk);
                    prop_assert!(same(*got, as_f64(wv)), "{}: {} {} != {:?}", name, k, got, wv);
                }
            }
        }
    }
}
