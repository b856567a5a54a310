//! Data readers: a Megatron `*_ids.npy` + `*_idx.npz` set the test writes (memory-mapped,
//! split by document with FleetX's ratios, samples of max_seq_len + 1), text / JSONL input,
//! and a Hugging Face tokenizer.json.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use modelzoo_text::Tokenizer;
use modelzoo_text::{npy, Corpus, DataError, GptDataset, Split};

/// Writes `<dir>/<prefix>_ids.npy` and `<prefix>_idx.npz` for documents of the given
/// lengths; token t of the stream has id t % 1000 so positions are recognisable.
fn write_megatron(dir: &Path, prefix: &str, lens: &[i64], descr: &str, deflate: bool) -> Vec<i64> {
    let total: i64 = lens.iter().sum();
    let ids: Vec<i64> = (0..total).map(|t| t % 1000).collect();
    std::fs::write(
        dir.join(format!("{prefix}_ids.npy")),
        npy::encode_i64(&ids, descr),
    )
    .unwrap();
    let file = std::fs::File::create(dir.join(format!("{prefix}_idx.npz"))).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let method = if deflate {
        zip::CompressionMethod::Deflated
    } else {
        zip::CompressionMethod::Stored
    };
    let opts = zip::write::FileOptions::default().compression_method(method);
    zip.start_file("lens.npy", opts).unwrap();
    zip.write_all(&npy::encode_i64(lens, "<i8")).unwrap();
    zip.start_file("docs.npy", opts).unwrap();
    zip.write_all(&npy::encode_i64(&[0], "<i8")).unwrap();
    zip.finish().unwrap();
    ids
}

#[test]
fn megatron_set_is_split_by_document_and_sampled() {
    let dir = tempfile::tempdir().unwrap();
    // 100 documents of 50 tokens: split 8,1,1 → 80 / 10 / 10 documents.
    let lens = vec![50i64; 100];
    let ids = write_megatron(dir.path(), "gpt_openwebtext", &lens, "<u2", true);
    let tok = Tokenizer::load(None).unwrap();
    let corpus = Arc::new(Corpus::open(Some(dir.path()), &tok).unwrap());
    assert_eq!(corpus.num_documents(), 100);
    assert_eq!(corpus.num_tokens(), 5000);
    let ranges = corpus.split_ranges("8,1,1").unwrap();
    assert_eq!(ranges, [0..4000, 4000..4500, 4500..5000]);
    let seq = 32;
    let train = GptDataset::new(corpus.clone(), "8,1,1", Split::Train, seq, None).unwrap();
    let valid = GptDataset::new(corpus.clone(), "8,1,1", Split::Valid, seq, None).unwrap();
    let test = GptDataset::new(corpus.clone(), "8,1,1", Split::Test, seq, Some(5)).unwrap();
    assert_eq!(train.len(), (4000 - 1) / seq);
    assert_eq!(valid.len(), (500 - 1) / seq);
    assert_eq!(test.len(), (500 - 1) / seq);
    // Samples are seq + 1 consecutive tokens, overlapping by one, inside their split.
    let (at, s0) = train.sample(0);
    assert_eq!(at, 0);
    assert_eq!(s0, ids[0..=seq].to_vec());
    let (at1, s1) = train.sample(1);
    assert_eq!(at1, seq);
    assert_eq!(s1[0], s0[seq]);
    for i in 0..valid.len() {
        let (at, s) = valid.sample(i);
        assert!((4000..4500).contains(&at) && at + seq < 4500);
        assert_eq!(s, ids[at..=at + seq].to_vec());
    }
    for i in 0..test.len() {
        assert!(test.sample(i).0 >= 4500);
    }
    // Batches: input and labels shifted by one; ids beyond the vocabulary are an error.
    let (x, y) = train.batch(1, 4, 1000).unwrap();
    assert_eq!(x.size(), vec![4, seq as i64]);
    assert_eq!(x.int64_value(&[0, 1]), y.int64_value(&[0, 0]));
    let err = train.batch(0, 4, 100).unwrap_err();
    assert!(
        matches!(err, DataError::TokenOutOfRange { id: 100, .. }),
        "{err}"
    );
    // FleetX's default 949,50,1 on 100 documents: 95 / 5 / 0.
    let r = corpus.split_ranges("949,50,1").unwrap();
    assert_eq!((r[0].len(), r[1].len(), r[2].len()), (4750, 250, 0));
    let empty = GptDataset::new(corpus, "949,50,1", Split::Test, seq, None).unwrap();
    assert!(empty.is_empty());
}

#[test]
fn megatron_prefix_file_and_dtypes() {
    let dir = tempfile::tempdir().unwrap();
    let ids = write_megatron(dir.path(), "a", &[3, 4, 5], "<i4", false);
    let tok = Tokenizer::load(None).unwrap();
    for input in ["a", "a_ids.npy", "a_idx.npz"] {
        let c = Corpus::open(Some(&dir.path().join(input)), &tok).unwrap();
        assert_eq!(c.num_tokens(), 12, "{input}");
    }
    let c = Arc::new(Corpus::open_megatron(&dir.path().join("a")).unwrap());
    let ds = GptDataset::new(c, "1", Split::Train, 4, None).unwrap();
    assert_eq!(ds.sample(1).1, ids[4..9].to_vec());
    // Two prefixes in one directory: ambiguous, named in the error.
    write_megatron(dir.path(), "b", &[2], "<i8", false);
    let err = Corpus::open(Some(dir.path()), &tok)
        .unwrap_err()
        .to_string();
    assert!(err.contains("a, b"), "{err}");
}

#[test]
fn broken_megatron_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    write_megatron(dir.path(), "x", &[10, 10], "<i8", false);
    // Lengths promising more tokens than the ids file holds.
    let file = std::fs::File::create(dir.path().join("x_idx.npz")).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    zip.start_file("lens.npy", zip::write::FileOptions::default())
        .unwrap();
    zip.write_all(&npy::encode_i64(&[10, 30], "<i8")).unwrap();
    zip.finish().unwrap();
    let err = Corpus::open_megatron(&dir.path().join("x"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("40 tokens") && err.contains("x_ids.npy"),
        "{err}"
    );
    std::fs::write(dir.path().join("x_idx.npz"), b"not a zip").unwrap();
    let err = Corpus::open_megatron(&dir.path().join("x"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("x_idx.npz") && err.contains("zip"), "{err}");
    std::fs::write(dir.path().join("x_ids.npy"), b"garbage").unwrap();
    let err = Corpus::open_megatron(&dir.path().join("x"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("x_ids.npy") && err.contains("magic"), "{err}");
    let err = Corpus::open_megatron(&dir.path().join("missing"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing_ids.npy"), "{err}");
}

#[test]
fn text_and_jsonl_inputs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "first doc\n\nsecond doc\n").unwrap();
    std::fs::write(
        dir.path().join("b.jsonl"),
        "{\"text\": \"third\"}\n\n{\"text\": \"fourth é\"}\n",
    )
    .unwrap();
    let tok = Tokenizer::load(None).unwrap();
    let c = Corpus::open(Some(dir.path()), &tok).unwrap();
    assert_eq!(c.num_documents(), 4);
    // Bytes plus one end-of-text per document ("é" is two bytes).
    assert_eq!(c.num_tokens(), 9 + 10 + 5 + 9 + 4);
    std::fs::write(dir.path().join("c.jsonl"), "{\"txt\": 1}\n").unwrap();
    let err = Corpus::open(Some(dir.path()), &tok)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("c.jsonl") && err.contains("line 1") && err.contains("text"),
        "{err}"
    );
    let empty = tempfile::tempdir().unwrap();
    let err = Corpus::open(Some(empty.path()), &tok)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no data found"), "{err}");
}

/// A small byte-level BPE tokenizer.json in the GPT-2 layout (ByteLevel pre-tokenizer and
/// decoder, `<|endoftext|>` special token).
const TOKENIZER_JSON: &str = r#"{
  "version": "1.0",
  "truncation": null,
  "padding": null,
  "added_tokens": [
    {"id": 9, "content": "<|endoftext|>", "single_word": false, "lstrip": false,
     "rstrip": false, "normalized": false, "special": true}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "model": {
    "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
    "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
    "vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "abc": 5, "Ġa": 6, "Ġab": 7, "Ġabc": 8},
    "merges": ["Ġ a", "Ġa b", "Ġab c", "a b", "ab c"]
  }
}"#;

#[test]
fn hugging_face_tokenizer_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, TOKENIZER_JSON).unwrap();
    let tok = Tokenizer::load(Some(&path)).unwrap();
    assert_eq!(tok.vocab_size(), 10);
    assert_eq!(tok.eos_id(), Some(9));
    let ids = tok.encode("abc abc ab").unwrap();
    assert_eq!(ids, vec![5, 8, 7]);
    assert_eq!(tok.decode(&ids).unwrap(), "abc abc ab");
    let c = Corpus::from_documents("t", vec!["abc abc", "ab"], &tok).unwrap();
    assert_eq!(c.num_tokens(), 2 + 1 + 1 + 1);
    std::fs::write(&path, "{").unwrap();
    let err = Tokenizer::load(Some(&path)).unwrap_err().to_string();
    assert!(err.contains("tokenizer.json"), "{err}");
}

#[test]
fn byte_tokenizer_round_trip() {
    let tok = Tokenizer::load(None).unwrap();
    assert_eq!(tok.vocab_size(), 257);
    let ids = tok.encode("héllo").unwrap();
    assert_eq!(ids.len(), 6);
    let mut with_eos = ids.clone();
    with_eos.push(256);
    assert_eq!(tok.decode(&with_eos).unwrap(), "héllo");
}

/// Issue #38 B6: an id beyond the model's vocabulary was found only when the batch holding
/// it was drawn, mid-training. `check_vocab` scans the whole corpus up front and names the
/// first bad id and its position — past the first block of the scan, and a negative id too.
#[test]
fn every_token_is_checked_against_the_vocabulary_up_front() {
    let dir = tempfile::tempdir().unwrap();
    // 70,000 tokens with ids t % 1000; then raise one id past a vocabulary of 1000.
    write_megatron(dir.path(), "big", &[30_000, 40_000], "<u2", false);
    let ids_path = dir.path().join("big_ids.npy");
    let mut ids: Vec<i64> = (0..70_000).map(|t| t % 1000).collect();
    let c = Corpus::open_megatron(&dir.path().join("big")).unwrap();
    c.check_vocab(1000).unwrap();
    assert!(matches!(
        c.check_vocab(999),
        Err(DataError::TokenOutOfRange {
            id: 999,
            position: 999,
            vocab: 999,
            ..
        })
    ));
    ids[69_001] = 1000;
    std::fs::write(&ids_path, npy::encode_i64(&ids, "<u2")).unwrap();
    let c = Corpus::open_megatron(&dir.path().join("big")).unwrap();
    let e = c.check_vocab(1000).unwrap_err();
    assert!(
        matches!(
            e,
            DataError::TokenOutOfRange {
                id: 1000,
                position: 69_001,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("outside the model vocabulary"),
        "{e}"
    );
    ids[69_001] = 0;
    ids[5] = -3;
    std::fs::write(&ids_path, npy::encode_i64(&ids, "<i4")).unwrap();
    let c = Corpus::open_megatron(&dir.path().join("big")).unwrap();
    assert!(matches!(
        c.check_vocab(1000),
        Err(DataError::TokenOutOfRange {
            id: -3,
            position: 5,
            ..
        })
    ));
}

/// A tokenizer.json whose ids leave gaps produces ids up to its largest: that + 1 is the
/// vocabulary it needs (its count of tokens was compared with Model.vocab_size).
#[test]
fn a_tokenizer_with_unused_ids_needs_its_largest_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, TOKENIZER_JSON.replace("\"Ġabc\": 8", "\"Ġabc\": 40")).unwrap();
    let tok = Tokenizer::load(Some(&path)).unwrap();
    assert_eq!(tok.vocab_size(), 41);
    assert_eq!(tok.encode(" abc").unwrap(), vec![40]);
}

/// Runs `f` on a thread and fails the test if it has not returned within 10 s: a read that
/// blocks (on a FIFO) fails instead of hanging the suite.
fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("blocked: a FIFO was opened for reading")
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Issue #38 C9/D12: a FIFO or `/dev/zero` as `tokenizer.json` is refused at once, and one past
/// the bound is refused before it is read (a sparse file: no real bytes written).
#[test]
fn tokenizer_json_is_a_regular_file_within_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("tokenizer.json");
    mkfifo(&fifo);
    let err = within_10s(move || Tokenizer::load(Some(&fifo)).unwrap_err().to_string());
    assert!(
        err.contains("tokenizer.json") && err.contains("a FIFO"),
        "{err}"
    );
    let err = Tokenizer::load(Some(Path::new("/dev/zero")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("a character device"), "{err}");
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(modelzoo_text::tokenizer::MAX_TOKENIZER_BYTES + 1)
        .unwrap();
    let err = Tokenizer::load(Some(&big)).unwrap_err().to_string();
    assert!(
        err.contains("big.json") && err.contains("larger than 67108864 bytes"),
        "{err}"
    );
}

/// Issue #38 D12: a one-line corpus (8 MiB here, sparse) is refused with its line named, not
/// tokenized whole; so is a paragraph of many lines past the bound, a `.jsonl` line past it and
/// a file past the file bound (never read); a FIFO named `.txt` is refused, not opened.
#[test]
fn corpus_files_are_streamed_within_their_bounds() {
    use modelzoo_text::corpus::{MAX_DOCUMENT_BYTES, MAX_TEXT_FILE_BYTES};
    let tok = Tokenizer::load(None).unwrap();
    let open = |p: &Path| Corpus::open(Some(p), &tok).unwrap_err().to_string();
    let dir = tempfile::tempdir().unwrap();
    let one_line = dir.path().join("one.txt");
    std::fs::File::create(&one_line)
        .unwrap()
        .set_len(2 * MAX_DOCUMENT_BYTES as u64)
        .unwrap();
    let err = open(&one_line);
    assert!(
        err.contains("one.txt: line 1:") && err.contains("longer than 4194304 bytes"),
        "{err}"
    );
    // Lines of 1 MiB, no blank line between them: one paragraph past the bound, at line 5.
    let long = dir.path().join("para.txt");
    let line = format!("{}\n", "w".repeat(1 << 20));
    std::fs::write(&long, format!("short\n\n{}", line.repeat(5))).unwrap();
    let err = open(&long);
    assert!(err.contains("para.txt: line 6:"), "{err}");
    let jsonl = dir.path().join("d.jsonl");
    std::fs::write(
        &jsonl,
        format!("{{\"text\": \"{}\"}}\n", "j".repeat(MAX_DOCUMENT_BYTES)),
    )
    .unwrap();
    assert!(open(&jsonl).contains("d.jsonl: line 1: the line is longer"));
    let huge = dir.path().join("huge.txt");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(MAX_TEXT_FILE_BYTES + 1)
        .unwrap();
    let started = std::time::Instant::now();
    let err = open(&huge);
    assert!(
        err.contains("huge.txt") && err.contains("larger than"),
        "{err}"
    );
    assert!(started.elapsed().as_secs() < 2, "the file was read");
    let fifo_dir = tempfile::tempdir().unwrap();
    mkfifo(&fifo_dir.path().join("a.txt"));
    let p = fifo_dir.path().to_path_buf();
    let err = within_10s(move || {
        let tok = Tokenizer::load(None).unwrap();
        Corpus::open(Some(&p), &tok)
            .map(drop)
            .unwrap_err()
            .to_string()
    });
    assert!(
        err.contains("no data found") || err.contains("a FIFO"),
        "{err}"
    );
}

/// A Hugging Face `tokenizer.json` (issue #38: the fuzz targets cover the tokenizer JSON a user
/// gives), loaded from `bytes` and used: it loads or says why, never a panic or a hang.
fn load_tokenizer(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, bytes).unwrap();
    if let Ok(tok) = Tokenizer::load(Some(&path)) {
        let _ = tok.vocab_size();
        let _ = tok.eos_id();
        if let Ok(ids) = tok.encode("abc ab hello world <|endoftext|> [CLS] ünïcode") {
            let _ = tok.decode(&ids);
        }
        let _ = tok.decode(&[0, 1, 2, 3, 9, 1_000_000]);
    }
}

proptest::proptest! {
    // Fewer cases than the parsers' targets: each loads a whole tokenizer.
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
        modelzoo_testkit::fuzz::CASES / 4
    ))]

    #[test]
    fn tokenizer_json_never_panics(
        input in modelzoo_testkit::fuzz::mutated(modelzoo_testkit::fuzz::corpus(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus"),
        ))
    ) {
        modelzoo_testkit::fuzz::within(std::time::Duration::from_secs(10), input, load_tokenizer);
    }
}
