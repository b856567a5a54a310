//! Fuzzing what users feed `modelzoo compare` and `modelzoo diff` (issue #28): training logs in
//! every format the dllogger reader knows, and the records of a step dump, from the seeds in
//! tests/fuzz_corpus/ mutated — every case is read to the end or refused with an error, never a
//! panic or a hang.

use std::io::Cursor;
use std::path::Path;
use std::time::Duration;

use modelzoo_testkit::fuzz::{corpus, mutated, within, CASES};
use proptest::prelude::*;

fn seeds(dir: &str) -> Vec<Vec<u8>> {
    corpus(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fuzz_corpus")
            .join(dir),
    )
}

fn read_log(bytes: &[u8]) {
    for max_line in [dllogger::DEFAULT_MAX_LINE, 64] {
        let mut reader =
            dllogger::LogReader::new(Cursor::new(bytes.to_vec())).with_max_line(max_line);
        while let Ok(Some(_)) = reader.try_next() {}
        let stats = reader.stats();
        assert!(stats.records >= stats.record_lines, "{stats:?}");
    }
}

fn load_dump(bytes: &[u8]) {
    let good = |name: &str| {
        seeds("dump").into_iter().find(|s| {
            let text = String::from_utf8_lossy(s);
            if name == "meta" {
                text.contains("\"format\"")
            } else {
                text.contains("\"key\"")
            }
        })
    };
    let tmp = tempfile::tempdir().unwrap();
    for (meta, records) in [
        (good("meta").unwrap(), bytes.to_vec()),
        (bytes.to_vec(), good("records").unwrap()),
    ] {
        let dir = tmp.path().join("rank0/step1");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("meta.json"), meta).unwrap();
        std::fs::write(dir.join("records.jsonl"), records).unwrap();
        let _ = validator::diff::load(tmp.path(), None, None);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn training_logs_of_every_format_never_panic(input in mutated(seeds("logs"))) {
        within(Duration::from_secs(10), input, read_log);
    }

    /// Plain-text loss lines (issue #38: the console parser of scripts that print their
    /// losses — `loss nan`, tqdm redraws, dict prints, `tensor(…)`), read to the end.
    #[test]
    fn plain_text_loss_lines_never_panic(input in mutated(seeds("console"))) {
        within(Duration::from_secs(10), input, read_log);
    }

    #[test]
    fn step_dumps_never_panic(input in mutated(seeds("dump"))) {
        within(Duration::from_secs(10), input, load_dump);
    }
}
