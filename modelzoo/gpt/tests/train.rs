//! `run_gpt` training through the engine (real processes, real libtorch): the tiny config
//! learns the built-in corpus, what it writes is what `--generate` reads, and it runs on the
//! SDAA emulator (a stand-in for hardware we cannot have: plumbing only, never SDAA numbers).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use modelzoo_gpt::checkpoint;
use modelzoo_gpt::config::{DecodeStrategy, GptConfig};
use modelzoo_gpt::generate::generate;
use modelzoo_gpt::Gpt;
use modelzoo_text::Tokenizer;
use tch::nn::VarStore;
use tch::Device;

const BIN: &str = env!("CARGO_BIN_EXE_run_gpt");

fn tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/gpt_tiny.yaml")
}

fn run(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args).env("RUST_LOG", "warn");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run_gpt starts")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// (iteration, value) of `metric` in the run's dllogger JSON log.
fn series(out: &Path, metric: &str) -> Vec<(u64, f64)> {
    modelzoo_testkit::series(&out.join("gpt_log.json"), metric)
}

/// Cross entropy (nats) of the corpus' byte unigram distribution: the loss of a model that
/// ignores context. Getting 0.3 nats below it means the model uses context (same bar as the
/// library test `tiny_gpt_learns_the_builtin_corpus`).
fn unigram_entropy(text: &str) -> f64 {
    let mut counts = [0f64; 256];
    for b in text.bytes() {
        counts[b as usize] += 1.0;
    }
    let n = text.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0.0)
        .map(|&c| -(c / n) * (c / n).ln())
        .sum()
}

fn greedy(ckpt: &str, prompt: &str) -> Output {
    let cfg = tiny();
    run(
        &[
            "--generate",
            "--ckpt",
            ckpt,
            "--prompt",
            prompt,
            "-c",
            cfg.to_str().unwrap(),
            "-o",
            "Generation.decode_strategy=greedy_search",
            "-o",
            "Generation.max_dec_len=24",
        ],
        &[],
    )
}

#[test]
fn tiny_config_learns_the_builtin_corpus_and_generate_reads_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let cfg = tiny();
    let o = run(
        &[
            "-c",
            cfg.to_str().unwrap(),
            "--step",
            "100",
            "-o",
            "Engine.logging_freq=1",
            "--output_dir",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("tokens/s"), "{stdout}");

    let loss = series(&out, "train.loss");
    assert_eq!(loss.len(), 100, "{}", text(&o));
    let vocab = 320f64;
    assert!(
        (loss[0].1 - vocab.ln()).abs() < 0.3,
        "first loss {} vs ln(vocab) {}",
        loss[0].1,
        vocab.ln()
    );
    let ips = series(&out, "train.ips");
    let mfu = series(&out, "train.mfu");
    let lr = series(&out, "train.lr");
    assert_eq!((ips.len(), mfu.len(), lr.len()), (100, 100, 100));
    assert!(ips.iter().all(|(_, v)| *v > 0.0));
    // MFU is tokens/s × FLOPs per token / a fixed peak: proportional to train.ips.
    let ratio = mfu[0].1 / ips[0].1;
    assert!(ratio > 0.0 && ratio.is_finite(), "{mfu:?}");
    for ((_, m), (_, i)) in mfu.iter().zip(&ips) {
        assert!((m / i - ratio).abs() < 1e-9 * ratio, "{m} / {i} vs {ratio}");
    }
    // FleetX warmup: step 0 trains at lr 0; warmup = 0.05 × 200 = 10 steps to max_lr 3e-3.
    assert_eq!(lr[0].1, 0.0);
    assert!((lr[10].1 - 3e-3).abs() < 1e-12, "{:?}", &lr[..12]);

    let h1 = unigram_entropy(modelzoo_text::BUILTIN_CORPUS);
    let val = series(&out, "val.loss");
    let ppl = series(&out, "val.ppl");
    let last = val.last().expect("val.loss logged").1;
    assert!(
        last < h1 - 0.3,
        "val.loss {last} not below unigram entropy {h1} - 0.3"
    );
    let last_ppl = ppl.last().expect("val.ppl logged").1;
    assert!((last_ppl - last.exp()).abs() < 1e-9 * last_ppl);

    // The checkpoint the run wrote: --generate on the output dir is deterministic and equals
    // the library's greedy decode of the same weights.
    let ck = out.to_str().unwrap();
    let prompt = "Ada walked to";
    let a = greedy(ck, prompt);
    assert!(a.status.success(), "{}", text(&a));
    assert_eq!(a.stdout, greedy(ck, prompt).stdout);
    let (file, dir_) = checkpoint::resolve(&out).unwrap();
    assert_eq!(file, out.join("checkpoints/step_00000100.ckpt"));
    let meta = checkpoint::read_meta(&dir_)
        .unwrap()
        .expect("gpt_config.json");
    let vs = VarStore::new(Device::Cpu);
    let model = Gpt::new(&vs.root(), &meta.model);
    checkpoint::load_weights(&vs, &file).unwrap();
    let mut gen = GptConfig::load(Some(&cfg), &[]).unwrap().generation;
    gen.decode_strategy = DecodeStrategy::GreedySearch;
    gen.max_dec_len = 24;
    let tok = Tokenizer::load(None).unwrap();
    let ids: Vec<i64> = tok
        .encode(prompt)
        .unwrap()
        .into_iter()
        .map(i64::from)
        .collect();
    let got = generate(&model, &ids, &gen, Some(256), 0, &Device::Cpu).unwrap();
    let got: Vec<u32> = got[0].iter().map(|&i| i as u32).collect();
    let line = format!("Generation: {prompt}{}", tok.decode(&got).unwrap());
    assert!(
        String::from_utf8_lossy(&a.stdout).contains(&line),
        "{}\nexpected {line}",
        text(&a)
    );
}

#[test]
fn micro_below_local_batch_accumulates_and_resume_continues() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let cfg = tiny();
    let base = [
        "-c",
        cfg.to_str().unwrap(),
        "-o",
        "Data.batch_size.micro_batch_size=4",
        "-o",
        "Engine.logging_freq=1",
        "-o",
        "Engine.save_load.save_steps=2",
        "--output_dir",
        out.to_str().unwrap(),
    ];
    let mut args = base.to_vec();
    args.extend(["--step", "2"]);
    let o = run(&args, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("ERROR"), "{err}");
    // 16 / 4 = 4 micro-batches of 4 × 64 tokens per logged step.
    assert_eq!(series(&out, "train.loss").len(), 2);
    let mut args = base.to_vec();
    let ck = out.join("checkpoints");
    args.extend(["--step", "4", "--resume", ck.to_str().unwrap()]);
    let o = run(&args, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let iters: Vec<u64> = series(&out, "train.loss").iter().map(|x| x.0).collect();
    assert_eq!(iters, vec![1, 2, 3, 4]);
}

#[test]
fn bad_training_input_is_a_clear_error() {
    let cfg = tiny();
    let c = cfg.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let o_dir = dir.path().to_str().unwrap();
    let o = run(
        &[
            "-c",
            c,
            "-o",
            "Data.batch_size.micro_batch_size=5",
            "--output_dir",
            o_dir,
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("micro_batch_size"), "{}", text(&o));
    let missing = dir.path().join("nope");
    let o = run(
        &[
            "-c",
            c,
            "--dataset_path",
            missing.to_str().unwrap(),
            "--output_dir",
            o_dir,
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("nope"), "{}", text(&o));
}

/// A `-c` file that is empty, lost its last sections or was cut off inside `Model:` is an
/// error naming the file (and the missing keys and the file's last line) — it used to train
/// the built-in 124M model instead (OOM-killed on a 24 GB machine, or silently the 86M shape
/// with the file's vocabulary); sizes that cannot fit and values no run can use are refused up
/// front, exit 2.
#[test]
fn empty_truncated_configs_impossible_sizes_and_bad_ranges_exit_2_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let o_dir = dir.path().join("out");
    let o_dir = o_dir.to_str().unwrap();
    let empty = dir.path().join("empty.yaml");
    std::fs::write(&empty, "  \n# nothing yet\n").unwrap();
    let truncated = dir.path().join("truncated.yaml");
    let tiny_text = std::fs::read_to_string(tiny()).unwrap();
    let cut = tiny_text
        .find("Model:")
        .expect("gpt_tiny.yaml has a Model section");
    std::fs::write(&truncated, &tiny_text[..cut]).unwrap();
    let in_model = dir.path().join("in_model.yaml");
    let cut = tiny_text.find("  hidden_size:").unwrap();
    std::fs::write(&in_model, &tiny_text[..cut]).unwrap();
    let last_line = format!(
        "ends at line {} inside `Model:` — truncated?",
        tiny_text[..cut].lines().count()
    );
    let tiny = tiny();
    let c = tiny.to_str().unwrap();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["-c", empty.to_str().unwrap()],
            vec!["empty.yaml: the config is empty", "124M"],
        ),
        (
            vec!["-c", truncated.to_str().unwrap()],
            vec![
                "truncated.yaml: incomplete config: no `Model`, `Optimizer` section (found: Engine, Data;",
                "inside `Data:` — truncated?",
            ],
        ),
        (
            vec!["-c", in_model.to_str().unwrap()],
            vec![
                "in_model.yaml: incomplete config",
                "`Model` has no hidden_size, num_layers, num_attention_heads, max_position_embeddings",
                &last_line,
            ],
        ),
        (
            vec![
                "-c",
                c,
                "-o",
                "Data.batch_size.global_batch_size=",
                "-o",
                "Data.batch_size.micro_batch_size=100000000000",
                "-o",
                "Data.batch_size.local_batch_size=100000000000",
            ],
            vec!["micro_batch_size 100000000000", "one training step needs"],
        ),
        (
            vec![
                "-c",
                c,
                "-o",
                "Model.hidden_size=4000000000",
                "-o",
                "Model.num_attention_heads=1",
            ],
            vec!["hidden_size 4000000000", "one training step needs"],
        ),
        (
            vec!["-c", c, "--lr", "nan"],
            vec!["--lr NaN: must be a finite number > 0"],
        ),
        (
            vec!["-c", c, "--lr", "-1"],
            vec!["--lr -1: must be a finite number > 0"],
        ),
        (
            vec!["-c", c, "-o", "Optimizer.weight_decay=-1"],
            vec!["Optimizer.weight_decay", "must be a finite number >= 0"],
        ),
    ];
    for (mut args, wants) in cases {
        args.extend(["--output_dir", o_dir]);
        let o = run(&args, &[]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        for want in wants {
            assert!(t.contains(want), "{args:?}: want {want:?} in\n{t}");
        }
        assert!(
            !t.contains("panicked") && !t.contains("memory allocation"),
            "{args:?}: {t}"
        );
    }
}

#[test]
fn tiny_config_runs_on_the_sdaa_emulator_and_its_log_parses() {
    let home = modelzoo_testkit::emulator_home();
    let home = home.canonicalize().unwrap_or(home);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let cfg = tiny();
    let o = Command::new(BIN)
        .args([
            "-c",
            cfg.to_str().unwrap(),
            "--device",
            "sdaa",
            "--step",
            "3",
            "-o",
            "Engine.logging_freq=1",
            "-o",
            "Engine.eval_iters=1",
            "--output_dir",
            out.to_str().unwrap(),
        ])
        .env("SDAA_HOME", &home)
        .env_remove("TECO_HOME")
        .env_remove("SDAA_TORCH_PLUGIN")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run_gpt starts");
    assert!(o.status.success(), "{}", text(&o));
    let loss = series(&out, "train.loss");
    assert_eq!(loss.len(), 3, "{}", text(&o));
    assert!(loss.iter().all(|(_, l)| l.is_finite()));
    assert!(!series(&out, "val.ppl").is_empty());
    assert!(out.join("checkpoints/step_00000003.ckpt").is_file());
}

fn fleetx_cfg() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fleetx/pretrain_gpt_tiny_single_card.yaml")
}

/// Issue #28: a config in FleetX's current layout — a model file with `_base_:` its base,
/// batch sizes and seed in `Global`, data in `Data.Train` / `Data.Eval` — trains the tiny
/// shape (it used to be refused: unknown section `_base_`). `Global.seed` is the run's seed
/// when `--seed` is not typed: the run equals one with `--seed 1024` and differs from the
/// `--seed` default's.
#[test]
fn fleetx_layout_with_a_base_chain_trains_and_applies_global_seed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = fleetx_cfg();
    let losses = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec![
            "-c",
            cfg.to_str().unwrap(),
            "--device",
            "cpu",
            "--step",
            "3",
            "-o",
            "Engine.eval_iters=1",
            "--output_dir",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = run(&args, &[]);
        assert!(o.status.success(), "{args:?}\n{}", text(&o));
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            stdout.contains("batch_size : 8 "),
            "Global.local_batch_size is the batch: {stdout}"
        );
        series(&out, "train.loss")
            .into_iter()
            .map(|x| x.1)
            .collect::<Vec<f64>>()
    };
    let global = losses("global", &[]);
    assert_eq!(global.len(), 3);
    assert!(global.iter().all(|l| l.is_finite()));
    assert_eq!(global, losses("typed", &["--seed", "1024"]));
    assert_ne!(global, losses("default", &["--seed", "42"]));
}

/// Issue #28: FleetX keys we cannot honour stop the run before it starts (exit 2), naming the
/// key and what to do — `Distributed` parallelism used to train on one process without a word.
#[test]
fn fleetx_layout_refusals_exit_2_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = fleetx_cfg();
    let c = cfg.to_str().unwrap();
    let out = dir.path().join("out");
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        // Global.device: gpu against the default --device cpu.
        (vec![], vec!["Global.device", "pass --device cuda"]),
        (
            vec![
                "--device",
                "cpu",
                "-o",
                "Distributed.mp_degree=2",
                "-o",
                "Distributed.sharding.sharding_degree=2",
                "-o",
                "Distributed.sharding.sharding_stage=2",
            ],
            vec![
                "Distributed.mp_degree",
                "this config would train on one process",
            ],
        ),
        (
            vec!["--device", "cpu", "-o", "Distributed.dp_degree=2"],
            vec!["Distributed.dp_degree", "1 data-parallel process"],
        ),
        (
            vec![
                "--device",
                "cpu",
                "-o",
                "Engine.mix_precision.use_pure_fp16=True",
            ],
            vec!["custom_white_list", "lookup_table", "remove it"],
        ),
        (
            vec!["--device", "cpu", "--autocast"],
            vec!["custom_white_list", "lookup_table"],
        ),
        (
            vec!["--device", "cpu", "-o", "Engine.accumulate_steps=4"],
            vec!["Engine.accumulate_steps", "set it to 1"],
        ),
        (
            vec!["--device", "cpu", "--epoch", "2", "--step", "-1"],
            vec!["Engine.save_load.save_epoch", "save_epoch to 2"],
        ),
    ];
    for (extra, wants) in cases {
        let mut args = vec!["-c", c, "--output_dir", out.to_str().unwrap()];
        args.extend(extra.iter().copied());
        let o = run(&args, &[]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        for want in wants {
            assert!(t.contains(want), "{args:?}: want {want:?} in\n{t}");
        }
        assert!(!out.exists(), "{args:?}: refused before writing anything");
    }
}

/// Issue #28: `--resume` with a file that is not a checkpoint is one error line naming the
/// file and what was expected (exit 2) — it used to print libtorch's C++ backtrace.
#[test]
fn resuming_from_a_file_that_is_not_a_checkpoint_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = tiny();
    for (name, bytes) in [
        ("notes.ckpt", b"hello\n".to_vec()),
        ("zip.ckpt", b"PK\x03\x04 not really a zip".to_vec()),
    ] {
        let bad = dir.path().join(name);
        std::fs::write(&bad, bytes).unwrap();
        let out = dir.path().join(format!("out-{name}"));
        let o = run(
            &[
                "-c",
                cfg.to_str().unwrap(),
                "--step",
                "2",
                "--resume",
                bad.to_str().unwrap(),
                "--output_dir",
                out.to_str().unwrap(),
            ],
            &[],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let line = err
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or_else(|| panic!("{err}"));
        assert!(
            line.contains(bad.to_str().unwrap())
                && line.contains("not a checkpoint")
                && line.contains("step_*.ckpt"),
            "{line}"
        );
        assert!(
            !err.contains("frame #") && !err.contains("Exception raised from"),
            "{err}"
        );
    }
}
