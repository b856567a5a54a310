//! `run_bert` end to end (real processes, real libtorch): bert_tiny pretrains on the built-in
//! corpus and logs what FlagPerf's BERT case reads; resume continues the same loss sequence
//! bit for bit; classification and SQuAD fine-tune on small generated data and report
//! `val.acc`, `val.exact_match` and `val.f1`; bf16 autocast trains on the CPU; it runs on the
//! SDAA emulator (plumbing only, never SDAA numbers); bad input exits 2.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_run_bert");

/// One libtorch thread per run: the tests run side by side on few cores, and OpenMP threads
/// spinning against each other slow a run down tenfold.
fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("OMP_NUM_THREADS", "1")
        .env("RUST_LOG", "warn")
        .env_remove("WORLD_SIZE")
        .output()
        .expect("run_bert starts")
}

fn text(o: &Output) -> String {
    modelzoo_testkit::output_text(o)
}

/// (iteration, value) of `metric` in the run's dllogger JSON log.
fn series(out: &Path, metric: &str) -> Vec<(u64, f64)> {
    modelzoo_testkit::series(&out.join("bert_tiny_log.json"), metric)
}

/// Pretrains bert_tiny with batch 8 at seq 64 (loss logged every step); returns the
/// `train.loss` series.
fn pretrain(out: &Path, steps: &str, extra: &[&str]) -> Vec<f64> {
    let mut args = vec![
        "--model_name",
        "bert_tiny",
        "--step",
        steps,
        "--batch_size",
        "8",
        "--max_seq_length",
        "64",
        "--logging_freq",
        "1",
        "--output_dir",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{args:?}\n{}", text(&o));
    series(out, "train.loss").into_iter().map(|x| x.1).collect()
}

#[test]
fn tiny_pretraining_learns_the_builtin_corpus_and_logs_flagperf_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run(&[
        "--model_name",
        "bert_tiny",
        "--task",
        "pretrain",
        "--step",
        "60",
        "--batch_size",
        "8",
        "--lr",
        "0.01",
        "--logging_freq",
        "1",
        "--output_dir",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("TCAPPDLL"), "{stdout}");
    assert!(stdout.contains("tokens/s"), "{stdout}");
    assert!(stdout.contains("optimizer : lamb"), "{stdout}");
    let loss = series(&out, "train.loss");
    assert_eq!(loss.len(), 60, "{}", text(&o));
    // At initialisation: masked-LM cross entropy ≈ ln(336 ids) plus next-sentence ≈ ln 2.
    let init = 336f64.ln() + 2f64.ln();
    assert!(
        (loss[0].1 - init).abs() < 0.3,
        "first loss {} vs ln(336) + ln(2) = {init}",
        loss[0].1
    );
    // The polynomial schedule: warm-up ceil(0.01 x 60) = 1 step, so the k-th update runs at
    // 0.01 x (1 - k / 60) (degree 1), the last one at 0.
    let lr = series(&out, "train.lr");
    assert_eq!(lr.len(), 60);
    for (k, l) in &lr {
        let want = 0.01 * (1.0 - *k as f64 / 60.0);
        assert!((l - want).abs() < 1e-12, "lr at update {k}: {l} vs {want}");
    }
    let (ips, mfu) = (series(&out, "train.ips"), series(&out, "train.mfu"));
    assert_eq!((ips.len(), mfu.len()), (60, 60));
    assert!(ips
        .iter()
        .zip(&mfu)
        .all(|((_, i), (_, m))| *i > 0.0 && *m > 0.0));
    let val = series(&out, "val.loss").last().expect("val.loss logged").1;
    let mlm = series(&out, "val.mlm_acc").last().expect("val.mlm_acc").1;
    let nsp = series(&out, "val.nsp_acc").last().expect("val.nsp_acc").1;
    assert!(val < init - 0.8, "val.loss {val} did not fall from {init}");
    // A fraction (FlagPerf's mlm_acc), well above chance (1/336).
    assert!((0.05..=1.0).contains(&mlm), "val.mlm_acc {mlm}");
    assert!((0.0..=1.0).contains(&nsp), "val.nsp_acc {nsp}");
    assert!(out.join("checkpoints/step_00000060.ckpt").is_file());
    assert!(out.join("checkpoints/bert_config.json").is_file());
}

/// Resume continues exactly: a 4-step run saves at step 2; resumed from that checkpoint in
/// another directory, steps 3 and 4 log the same losses (bit for bit) — the engine reseeds
/// per step (dropout), the shuffle and the masked positions derive from (seed, sample
/// position), LAMB's moments and the update count come back from the checkpoint, and the
/// polynomial schedule (which depends on the run's length) is the same 4-step one.
#[test]
fn resume_continues_the_same_losses() {
    let dir = tempfile::tempdir().unwrap();
    let save = ["-o", "Engine.save_load.save_steps=2"];
    let whole_dir = dir.path().join("whole");
    let whole = pretrain(&whole_dir, "4", &save);
    assert_eq!(whole.len(), 4);
    let ck = whole_dir.join("checkpoints/step_00000002.ckpt");
    assert!(ck.is_file(), "no {}", ck.display());
    let part = dir.path().join("part");
    let resumed = pretrain(&part, "4", &["--resume", ck.to_str().unwrap()]);
    let iters: Vec<u64> = series(&part, "train.loss").iter().map(|x| x.0).collect();
    assert_eq!(iters, vec![3, 4]);
    assert_eq!(
        whole[2..].to_vec(),
        resumed,
        "resumed losses differ from the uninterrupted run"
    );
}

/// bf16 autocast on the CPU trains (finite losses) and differs from fp32 at the same
/// initial weights, so `--autocast` is not silently ignored.
#[test]
fn bf16_autocast_trains_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let fp32 = pretrain(&dir.path().join("fp32"), "1", &[]);
    let bf16 = pretrain(
        &dir.path().join("bf16"),
        "3",
        &["--autocast", "--amp_dtype", "bf16"],
    );
    assert!(bf16.iter().all(|l| l.is_finite()), "{bf16:?}");
    let d = (bf16[0] - fp32[0]).abs();
    assert!(
        d > 1e-6 && d < 0.05,
        "bf16 {} vs fp32 {} at init",
        bf16[0],
        fp32[0]
    );
}

#[test]
fn tiny_pretraining_runs_on_the_sdaa_emulator_with_autocast() {
    let home = modelzoo_testkit::emulator_home();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = Command::new(BIN)
        .args([
            "--model_name",
            "bert_tiny",
            "--device",
            "sdaa",
            "--autocast",
            "--step",
            "3",
            "--batch_size",
            "4",
            "--max_seq_length",
            "64",
            "--logging_freq",
            "1",
            "--output_dir",
            out.to_str().unwrap(),
        ])
        .env("SDAA_HOME", &home)
        .env("OMP_NUM_THREADS", "1")
        .env_remove("TECO_HOME")
        .env_remove("SDAA_TORCH_PLUGIN")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run_bert starts");
    assert!(o.status.success(), "{}", text(&o));
    let loss = series(&out, "train.loss");
    assert_eq!(loss.len(), 3, "{}", text(&o));
    assert!(loss.iter().all(|(_, l)| l.is_finite()));
    assert!(!series(&out, "val.mlm_acc").is_empty());
    assert!(out.join("checkpoints/step_00000003.ckpt").is_file());
}

const NAMES: [&str; 6] = ["ada", "ben", "leo", "cleo", "finn", "iris"];
const PLACES: [&str; 6] = ["river", "market", "library", "garden", "station", "forest"];
const ANIMALS: [&str; 6] = ["cat", "dog", "fox", "owl", "goat", "horse"];

/// A sentence of the built-in vocabulary from `i`, with `color`.
fn sentence(i: usize, color: &str) -> String {
    format!(
        "{} walked to the {} with a {color} {}.",
        NAMES[i % 6],
        PLACES[(i / 6) % 6],
        ANIMALS[(i / 36) % 6]
    )
}

/// GLUE-style TSV splits of a two-class task: is the animal red (1) or blue (0)?
fn write_classification(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for (file, range) in [("train.tsv", 0..160), ("dev.tsv", 160..200)] {
        let mut s = String::from("sentence\tlabel\n");
        for i in range {
            let red = (i * 7 + i / 3) % 2 == 0;
            let color = if red { "red" } else { "blue" };
            writeln!(s, "{}\t{}", sentence(i * 5 + 3, color), u8::from(red)).unwrap();
        }
        std::fs::write(dir.join(file), s).unwrap();
    }
}

/// SQuAD v1.1 files: a few sentences per paragraph, the question asks for the colour of one
/// person's animal.
fn write_squad(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let colors = ["red", "blue", "green", "white", "black", "brown"];
    for (file, range) in [("train-v1.1.json", 0..120), ("dev-v1.1.json", 120..150)] {
        let mut paragraphs = Vec::new();
        for i in range {
            let mut context = String::new();
            let mut starts = Vec::new();
            for k in 0..3 {
                let color = colors[(i + 2 * k) % 6];
                let s = format!(
                    "{} walked to the {} with a {color} {}. ",
                    NAMES[(i + k) % 6],
                    PLACES[(i * 5 + k) % 6],
                    ANIMALS[(i + 3 * k) % 6]
                );
                let at = context.len() + s.find(color).unwrap();
                starts.push((at, color));
                context.push_str(&s);
            }
            let k = i % 3;
            let (at, color) = starts[k];
            paragraphs.push(serde_json::json!({
                "context": context.trim_end(),
                "qas": [{
                    "id": format!("q{i}"),
                    "question": format!("what was the {} of {}?", "colour", NAMES[(i + k) % 6]),
                    "answers": [{"text": color, "answer_start": at}],
                }],
            }));
        }
        let json = serde_json::json!({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]});
        std::fs::write(dir.join(file), json.to_string()).unwrap();
    }
}

/// Sequence classification from TSV: the run learns a task the data decides (red vs blue),
/// logs `val.acc` in %, and AdamW is the default optimizer for fine-tuning.
#[test]
fn classification_learns_a_separable_task_and_reports_val_acc() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    write_classification(&data);
    let out = dir.path().join("run");
    let o = run(&[
        "--model_name",
        "bert_tiny",
        "--task",
        "classification",
        "--dataset_path",
        data.to_str().unwrap(),
        "--max_seq_length",
        "32",
        "--batch_size",
        "16",
        "--lr",
        "0.001",
        "--epoch",
        "6",
        "--logging_freq",
        "5",
        "--output_dir",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("optimizer : adamw"), "{stdout}");
    let acc = series(&out, "val.acc");
    assert!(!acc.is_empty(), "{}", text(&o));
    let last = acc.last().unwrap().1;
    assert!(
        last >= 90.0,
        "val.acc {acc:?}: the colour decides the class"
    );
}

/// SQuAD v1.1: spans map back to the context's text and are scored with the official
/// normalisation (F1 ≥ exact match, both in %); on this templated task (three sentences,
/// "what was the colour of NAME?") the model finds the asked colour.
#[test]
fn squad_fine_tuning_reports_exact_match_and_f1() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    write_squad(&data);
    let out = dir.path().join("run");
    let o = run(&[
        "--model_name",
        "bert_tiny",
        "--task",
        "squad",
        "--dataset_path",
        data.to_str().unwrap(),
        "--max_seq_length",
        "64",
        "--batch_size",
        "8",
        "--lr",
        "0.002",
        "--epoch",
        "8",
        "--logging_freq",
        "5",
        "--output_dir",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let em = series(&out, "val.exact_match");
    let f1 = series(&out, "val.f1");
    assert!(!em.is_empty() && em.len() == f1.len(), "{}", text(&o));
    for ((_, e), (_, f)) in em.iter().zip(&f1) {
        assert!((0.0..=100.0).contains(e) && (0.0..=100.0).contains(f));
        assert!(f >= e, "F1 {f} below exact match {e}");
    }
    // Any colour of the paragraph scores 1/3; above 60% the model links the asked name to
    // its sentence (seen: 100% after 8 epochs, 0% after 1 step).
    let last = em.last().unwrap().1;
    assert!(last > 60.0, "exact match {em:?}");
}

/// Pretraining, then fine-tuning from its output directory (`--pretrained RUN_DIR`): the
/// encoder and pooler load, the pretraining heads are left out, the classifier starts fresh.
#[test]
fn fine_tuning_starts_from_a_pretraining_run() {
    let dir = tempfile::tempdir().unwrap();
    let pre = dir.path().join("pre");
    pretrain(&pre, "2", &[]);
    let data = dir.path().join("data");
    write_classification(&data);
    let out = dir.path().join("cls");
    let o = Command::new(BIN)
        .args(["--model_name", "bert_tiny", "--task", "classification"])
        .args(["--dataset_path", data.to_str().unwrap()])
        .args(["--pretrained", pre.to_str().unwrap()])
        .args([
            "--max_seq_length",
            "32",
            "--batch_size",
            "16",
            "--step",
            "2",
        ])
        .args(["--output_dir", out.to_str().unwrap()])
        .env("OMP_NUM_THREADS", "1")
        .env("RUST_LOG", "info")
        .env_remove("WORLD_SIZE")
        .output()
        .expect("run_bert starts");
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    // 2 layers x 16 + 5 embedding + 2 pooler tensors load; 2 classifier tensors start fresh.
    assert!(t.contains("39 tensors loaded"), "{t}");
    assert!(
        t.contains("starting fresh: classifier.bias, classifier.weight")
            || t.contains("starting fresh: classifier.weight, classifier.bias"),
        "{t}"
    );
    assert!(t.contains("left out (other heads): cls."), "{t}");
    assert!(!series(&out, "val.acc").is_empty());
}

/// Bad input is a clear error and exit 2, never a panic.
#[test]
fn bad_input_exits_2_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let o_dir = dir.path().join("out");
    let o_dir = o_dir.to_str().unwrap();
    let garbage = dir.path().join("garbage.safetensors");
    std::fs::write(&garbage, b"not a safetensors file").unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let g = garbage.to_str().unwrap();
    let e = empty.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--model_name", "bert_huge"], "bert_huge"),
        (vec!["--task", "ner"], "ner"),
        (vec!["--task", "classification"], "--dataset_path"),
        (vec!["--task", "squad", "--dataset_path", e], "dev"),
        (
            vec!["--task", "classification", "--dataset_path", e],
            "train",
        ),
        (
            vec!["--pretrained", "/nonexistent/w.safetensors"],
            "--pretrained",
        ),
        (vec!["--pretrained", g], "garbage.safetensors"),
        (vec!["--tokenizer", g], "garbage.safetensors"),
        (vec!["--optimizer", "sgd"], "sgd"),
        (vec!["--max_seq_length", "1000"], "max_seq_length"),
        (vec!["--vocab_size", "10"], "--vocab_size"),
    ];
    for (mut args, want) in cases {
        if !args.contains(&"--model_name") {
            args.extend(["--model_name", "bert_tiny"]);
        }
        args.extend(["--step", "1", "--output_dir", o_dir]);
        let o = run(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains(want), "{args:?}: want {want:?} in\n{t}");
        assert!(!t.contains("panicked"), "{args:?}: {t}");
    }
}

/// Issue #38 B6: `--task squad` trained on answers outside their context (or on other text
/// than the answer), and on a tokenizer giving two tokens one id, without a word; a token id
/// past the model's vocabulary (a tokenizer.json with unused ids, counted by tokens) failed
/// mid-training with libtorch's index error, exit 1. All are refused before training, exit 2.
#[test]
fn squad_answers_and_tokenizer_ids_are_checked_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let o_dir = dir.path().join("out");
    let o_dir = o_dir.to_str().unwrap();
    let squad = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let data = dir.path().join(name);
        write_squad(&data);
        let file = data.join("train-v1.1.json");
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        edit(&mut json["data"][0]["paragraphs"][7]["qas"][0]["answers"][0]);
        std::fs::write(&file, json.to_string()).unwrap();
        data
    };
    let past = squad("past", &|a| a["answer_start"] = serde_json::json!(100_000));
    let other = squad("other", &|a| a["text"] = serde_json::json!("purple"));
    let builtin =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/tokenizer.json"))
            .unwrap();
    assert!(builtin.contains("\"walked\":290"));
    let holes = dir.path().join("holes.json");
    std::fs::write(&holes, builtin.replace("\"walked\":290", "\"walked\":5000")).unwrap();
    let shared = dir.path().join("shared.json");
    std::fs::write(&shared, builtin.replace("\"walked\":290", "\"walked\":291")).unwrap();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--task", "squad", "--dataset_path", past.to_str().unwrap()],
            vec!["question \"q7\"", "runs past its context"],
        ),
        (
            vec!["--task", "squad", "--dataset_path", other.to_str().unwrap()],
            vec!["question \"q7\"", "not its answer \"purple\""],
        ),
        (
            vec![
                "--tokenizer",
                holes.to_str().unwrap(),
                "--vocab_size",
                "1000",
            ],
            vec!["has 5001 ids but the model's vocabulary is 1000"],
        ),
        (
            vec!["--tokenizer", shared.to_str().unwrap()],
            vec!["291: ", "\"walked\"", "more than one token"],
        ),
    ];
    for (mut args, wants) in cases {
        args.extend([
            "--model_name",
            "bert_tiny",
            "--max_seq_length",
            "64",
            "--step",
            "1",
            "--output_dir",
            o_dir,
        ]);
        let o = run(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        for want in wants {
            assert!(t.contains(want), "{args:?}: want {want:?} in\n{t}");
        }
        assert!(!t.contains("train.loss"), "{args:?}: trained\n{t}");
    }
}

/// Issue #38 C9/D12: `--tokenizer` or `--pretrained` given a FIFO hung run_bert; given
/// `/dev/zero` it read until 16.9 GB. Each is refused before anything runs: exit 2 naming the
/// file and what it is. Under `timeout`, so a regression fails instead of hanging.
#[test]
fn a_fifo_or_a_device_as_tokenizer_or_pretrained_exits_2_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("tokenizer.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let fifo = fifo.to_str().unwrap();
    let out = dir.path().join("out");
    for (flag, path, want) in [
        ("--tokenizer", fifo, "is a FIFO"),
        ("--pretrained", fifo, "is a FIFO"),
        ("--tokenizer", "/dev/zero", "is a character device"),
        ("--pretrained", "/dev/zero", "is a character device"),
    ] {
        let o = std::process::Command::new("timeout")
            .args(["60", BIN, "--model_name", "bert_tiny", "--step", "1"])
            .arg("--output_dir")
            .arg(&out)
            .args([flag, path])
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{flag} {path}: {t}");
        assert!(t.contains(path) && t.contains(want), "{flag} {path}: {t}");
    }
}
