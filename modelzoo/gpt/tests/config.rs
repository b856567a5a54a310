//! The shipped configs load; unknown keys and unsupported options are errors naming them.

use std::path::{Path, PathBuf};

use modelzoo_gpt::config::{DecodeStrategy, GptConfig, LrSchedule};

fn config(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("configs")
        .join(name)
}

fn load_err(file: &str, overrides: &[&str]) -> String {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    GptConfig::load(Some(&config(file)), &o)
        .expect_err("config should be rejected")
        .to_string()
}

#[test]
fn shipped_configs_load() {
    for (file, hidden, layers) in [
        ("gpt_124m.yaml", 768, 12),
        ("gpt_345m_single_card.yaml", 1024, 24),
        ("gpt_1.3b_single_card.yaml", 2048, 24),
        ("gpt_tiny.yaml", 128, 2),
    ] {
        let c = GptConfig::load(Some(&config(file)), &[]).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(c.model.hidden_size, hidden, "{file}");
        assert_eq!(c.model.num_layers, layers, "{file}");
        assert_eq!(c.model.ffn_hidden(), 4 * hidden, "{file}");
        assert_eq!(c.optimizer.grad_clip.max_norm(), Some(1.0), "{file}");
    }
    let tiny = GptConfig::load(Some(&config("gpt_tiny.yaml")), &[]).unwrap();
    assert_eq!(tiny.data.dataset.input_dir, None);
    let b = tiny.data.batch_size.resolve(1).unwrap();
    assert_eq!(
        (b.global, b.local, b.micro, b.accumulate_steps),
        (16, 16, 16, 1)
    );
    let big = GptConfig::load(Some(&config("gpt_1.3b_single_card.yaml")), &[]).unwrap();
    assert_eq!(big.data.batch_size.resolve(1).unwrap().accumulate_steps, 8);
}

#[test]
fn overrides_apply() {
    let c = GptConfig::load(
        Some(&config("gpt_tiny.yaml")),
        &[
            "Generation.decode_strategy=greedy_search".into(),
            "Optimizer.grad_clip=0.5".into(),
            "Model.ffn_hidden_size=256".into(),
        ],
    )
    .unwrap();
    assert_eq!(c.generation.decode_strategy, DecodeStrategy::GreedySearch);
    assert_eq!(c.optimizer.grad_clip.max_norm(), Some(0.5));
    assert_eq!(c.model.ffn_hidden(), 256);
}

#[test]
fn unknown_key_names_it_and_lists_valid_keys() {
    let e = load_err("gpt_tiny.yaml", &["Model.hiden_size=64"]);
    assert!(e.contains("Model.hiden_size"), "{e}");
    assert!(e.contains("hidden_size"), "{e}");
    assert!(e.contains("Model.hiden_size=64"), "origin missing: {e}");
    let e = load_err("gpt_tiny.yaml", &["Generation.beam_size=4"]);
    assert!(e.contains("beam_size") && e.contains("top_k"), "{e}");
    let e = load_err("gpt_tiny.yaml", &["Modle.vocab_size=4"]);
    assert!(e.contains("Modle") && e.contains("Model"), "{e}");
}

#[test]
fn unsupported_options_are_errors_naming_them() {
    let e = load_err("gpt_tiny.yaml", &["Model.recompute_granularity=core_attn"]);
    assert!(e.contains("Model.recompute_granularity"), "{e}");
    let e = load_err("gpt_tiny.yaml", &["Optimizer.tensor_fusion=True"]);
    assert!(e.contains("Optimizer.tensor_fusion"), "{e}");
    let e = load_err("gpt_tiny.yaml", &["Optimizer.name=SGD"]);
    assert!(e.contains("Optimizer.name") && e.contains("SGD"), "{e}");
    let e = load_err("gpt_tiny.yaml", &["Generation.decode_strategy=beam_search"]);
    assert!(e.contains("decode_strategy"), "{e}");
    let e = load_err("gpt_tiny.yaml", &["Model.num_attention_heads=3"]);
    assert!(
        e.contains("Model.hidden_size") && e.contains("num_attention_heads"),
        "{e}"
    );
    let e = load_err("gpt_tiny.yaml", &["Data.dataset.max_seq_len=4096"]);
    assert!(e.contains("max_position_embeddings"), "{e}");
    let e = load_err("gpt_tiny.yaml", &["Data.batch_size.micro_batch_size=5"]);
    assert!(e.contains("micro_batch_size"), "{e}");
}

#[test]
fn cosine_schedule_warms_up_then_decays() {
    let lr = LrSchedule {
        name: None,
        decay_steps: 1000,
        warmup_rate: 0.01,
        max_lr: 1e-3,
        min_lr: 1e-4,
    };
    assert_eq!(lr.lr_at(0), 0.0);
    assert!((lr.lr_at(5) - 5e-4).abs() < 1e-12);
    assert!((lr.lr_at(10) - 1e-3).abs() < 1e-12);
    // Halfway through the cosine part: the midpoint of max and min.
    assert!((lr.lr_at(505) - 5.5e-4).abs() < 1e-9);
    assert!((lr.lr_at(1000) - 1e-4).abs() < 1e-12);
    assert_eq!(lr.lr_at(5000), 1e-4);
    let mut prev = f64::INFINITY;
    for s in 10..=1000 {
        assert!(lr.lr_at(s) <= prev);
        prev = lr.lr_at(s);
    }
}

fn fleetx(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fleetx")
        .join(name)
}

fn fleetx_err(overrides: &[&str]) -> String {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    GptConfig::load_for_training(Some(&fleetx("pretrain_gpt_tiny_single_card.yaml")), &o)
        .expect_err("config should be rejected")
        .to_string()
}

/// Issue #28: FleetX's current layout — `_base_`, batch sizes and seed in `Global`, data in
/// `Data.Train` / `Data.Eval`, `beta1` / `epsilon`, `FusedAdamW`, `Distributed`, `Profiler` —
/// reads into the same config as the seeds' layout (our own two-file chain in that shape).
#[test]
fn fleetx_layout_with_a_base_chain_reads_like_the_seeds_layout() {
    let c = GptConfig::load_for_training(Some(&fleetx("pretrain_gpt_tiny_single_card.yaml")), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let tiny = GptConfig::load(Some(&config("gpt_tiny.yaml")), &[]).unwrap();
    let b = c.data.batch_size.resolve(1).unwrap();
    assert_eq!(
        (b.global, b.local, b.micro, b.accumulate_steps),
        (8, 8, 8, 1)
    );
    assert_eq!(c.data.dataset.split, "949,50,1");
    assert_eq!(c.data.dataset.max_seq_len, 64);
    assert_eq!(c.data.dataset.input_dir, None);
    assert_eq!(c.global.seed, Some(1024));
    assert_eq!(c.global.device_kind().unwrap(), Some("cuda"));
    assert_eq!(c.optimizer.name.as_deref(), Some("FusedAdamW"));
    assert_eq!(
        (
            c.optimizer.adam_beta1,
            c.optimizer.adam_beta2,
            c.optimizer.adam_epsilon
        ),
        (0.9, 0.999, 1e-8)
    );
    assert_eq!(c.optimizer.lr, tiny.optimizer.lr);
    assert_eq!(c.optimizer.grad_clip, tiny.optimizer.grad_clip);
    // The shape is gpt_tiny.yaml's; the base adds module, name and the FleetX switches.
    assert_eq!(c.model.module.as_deref(), Some("GPTModule"));
    assert_eq!(
        (c.model.vocab_size, c.model.hidden_size, c.model.num_layers),
        (320, 128, 2)
    );
    assert_eq!(c.model.max_position_embeddings, 128);
    assert_eq!(c.accumulate_steps, Some(1));
    // Overrides reach Global like any section.
    let c = GptConfig::load_for_training(
        Some(&fleetx("pretrain_gpt_tiny_single_card.yaml")),
        &["Global.micro_batch_size=4".into()],
    )
    .unwrap();
    assert_eq!(c.data.batch_size.resolve(1).unwrap().accumulate_steps, 2);
}

/// Issue #28: every FleetX key is applied or refused with a message; these are refused,
/// naming the key and what to do.
#[test]
fn fleetx_keys_we_cannot_honour_are_refused() {
    for (o, want) in [
        (
            vec!["Distributed.mp_degree=2"],
            "tensor/pipeline parallelism and ZeRO sharding are not implemented",
        ),
        (vec!["Distributed.pp_degree=4"], "Distributed.pp_degree"),
        (
            vec![
                "Distributed.sharding.sharding_degree=2",
                "Distributed.sharding.sharding_stage=2",
            ],
            "Distributed.sharding.sharding_degree",
        ),
        (
            vec!["Distributed.sharding.sharding_offload=True"],
            "sharding_offload",
        ),
        (vec!["Data.Train.sampler.shuffle=True"], "reshuffle"),
        (vec!["Data.Train.sampler.drop_last=False"], "drop_last"),
        (
            vec!["Data.Train.sampler.name=DistributedBatchSampler"],
            "GPTBatchSampler",
        ),
        (vec!["Data.Train.loader.collate_fn=my_fn"], "gpt_collate_fn"),
        (
            vec!["Data.Eval.dataset.split=[98, 1, 1]"],
            "must name the same data",
        ),
        (
            vec!["Data.Eval.dataset.input_dir=./other"],
            "must name the same data",
        ),
        (
            vec!["Data.Test.dataset.max_seq_len=64"],
            "unknown field `Test`",
        ),
        (
            vec!["Data.batch_size.local_batch_size=16"],
            "Data.batch_size.local_batch_size = 16",
        ),
        (vec!["Data.dataset.max_seq_len=64"], "in one place"),
        (vec!["Profiler.enable=True"], "Profiler.enable"),
        (vec!["Fused.tensor_fusion=True"], "Fused.tensor_fusion"),
        (
            vec!["Optimizer.tensor_fusion=True"],
            "Optimizer.tensor_fusion",
        ),
        (vec!["Optimizer.name=Lamb"], "AdamW only"),
        (vec!["Optimizer.adam_beta1=0.8"], "duplicate field"),
        (
            vec!["Model.sequence_parallel=True"],
            "Model.sequence_parallel",
        ),
        (vec!["Model.module=GPTEvalModule"], "Model.module"),
        (
            vec!["Model.module=GPTGenerationModule"],
            "trains `GPTModule`",
        ),
        (vec!["Global.device=xpu"], "Kunlun XPU"),
        (vec!["Global.device=tpu"], "Global.device"),
        (vec!["Global.dtype=float16"], "unknown field `dtype`"),
        (vec!["Engine.test_iters=10"], "no test pass"),
        (vec!["Inference.model_dir=./out"], "inference export"),
        (
            vec!["Engine.mix_precision.custom_black_list=[reduce_sum, not_an_op]"],
            "not_an_op",
        ),
    ] {
        let e = fleetx_err(&o);
        assert!(e.contains(want), "{o:?}: want {want:?} in {e}");
    }
    // A disagreement between Global and Data names both places.
    let e = fleetx_err(&["Data.batch_size.local_batch_size=16"]);
    assert!(
        e.contains("Global.local_batch_size") && e.contains("pretrain_gpt_tiny_single_card.yaml:8"),
        "{e}"
    );
}

/// The mixed-precision lists are held against what run_gpt's AMP does: the shipped black list
/// is what we do (accepted under AMP); FleetX's white list (`lookup_table`) asks for a
/// half-precision embedding lookup, which ours is not — refused under AMP, inert without.
#[test]
fn amp_lists_match_what_our_amp_does() {
    for file in [
        "gpt_124m.yaml",
        "gpt_345m_single_card.yaml",
        "gpt_1.3b_single_card.yaml",
        "gpt_tiny.yaml",
    ] {
        let c = GptConfig::load(Some(&config(file)), &[]).unwrap();
        c.check_amp_lists(true)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
    }
    let c = GptConfig::load(Some(&fleetx("pretrain_gpt_tiny_single_card.yaml")), &[]).unwrap();
    c.check_amp_lists(false).unwrap();
    let e = c.check_amp_lists(true).unwrap_err().to_string();
    assert!(
        e.contains("Engine.mix_precision.custom_white_list")
            && e.contains("lookup_table")
            && e.contains("fp32"),
        "{e}"
    );
    let c = GptConfig::load(
        Some(&config("gpt_tiny.yaml")),
        &["Engine.mix_precision.custom_black_list=[softmax]".into()],
    )
    .unwrap();
    let e = c.check_amp_lists(true).unwrap_err().to_string();
    assert!(e.contains("scaled_dot_product_attention"), "{e}");
}

/// Issue #28: a config cut off inside `Model:` is an error naming the missing architecture
/// keys and the file's last line — it used to train the 124M default shape without a word.
#[test]
fn a_config_cut_off_inside_model_names_the_missing_keys_and_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(config("gpt_tiny.yaml")).unwrap();
    let cut = dir.path().join("cut.yaml");
    std::fs::write(&cut, &text[..text.find("  hidden_size:").unwrap()]).unwrap();
    let line = text[..text.find("  hidden_size:").unwrap()].lines().count();
    let e = GptConfig::load_for_training(Some(&cut), &[])
        .expect_err("a cut-off config must not train")
        .to_string();
    for want in [
        "`Model` has no hidden_size, num_layers, num_attention_heads, max_position_embeddings",
        "no `Optimizer` section",
        &format!("ends at line {line} inside `Model:` — truncated?"),
    ] {
        assert!(e.contains(want), "want {want:?} in {e}");
    }
    // The FleetX layout: the model file holds only Global, Model, Distributed; cut inside
    // Model, every section is still there (from the base) and the keys are what is missing.
    let text = std::fs::read_to_string(fleetx("pretrain_gpt_tiny_single_card.yaml")).unwrap();
    let base = "pretrain_gpt_base.yaml";
    std::fs::copy(fleetx(base), dir.path().join(base)).unwrap();
    let cut = dir.path().join("cut_in_model.yaml");
    std::fs::write(&cut, &text[..text.find("  hidden_size:").unwrap()]).unwrap();
    let e = GptConfig::load_for_training(Some(&cut), &[])
        .expect_err("a cut-off config must not train")
        .to_string();
    assert!(
        e.contains("`Model` has no hidden_size") && e.contains("inside `Model:` — truncated?"),
        "{e}"
    );
    assert!(!e.contains("section"), "{e}");
    // A key given by an override is given.
    GptConfig::load_for_training(
        Some(&cut),
        &[
            "Model.hidden_size=128".into(),
            "Model.num_layers=2".into(),
            "Model.num_attention_heads=4".into(),
            "Model.max_position_embeddings=128".into(),
        ],
    )
    .unwrap();
}

/// Loads `text` written to `dir/name` for training.
fn load_text(dir: &Path, name: &str, text: &str) -> Result<GptConfig, String> {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    GptConfig::load_for_training(Some(&path), &[]).map_err(|e| e.to_string())
}

/// Where to cut `text`: at the start of each line, inside it (halfway) and before its last
/// character — before every key, and inside every key and value (every character would do,
/// at 20x the time).
fn cuts(text: &str) -> Vec<usize> {
    let mut at = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let inside: Vec<usize> = body.char_indices().map(|(i, _)| start + i).collect();
        at.push(start);
        if let (Some(&mid), Some(&last)) = (inside.get(inside.len() / 2), inside.last()) {
            at.extend([mid, last]);
        }
        start += line.len();
    }
    at.retain(|&c| c > 0);
    at.dedup();
    at
}

/// Every prefix of `text` ([`cuts`]) is refused, or loads the same run as the whole text: a
/// truncated file never trains something else without a word. `Generation` is compared only
/// when the prefix still holds its header (training does not read it).
fn every_cut_is_refused_or_the_same(dir: &Path, name: &str, text: &str) -> usize {
    let whole = load_text(dir, name, text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut refused = 0;
    for cut in cuts(text) {
        let part = &text[..cut];
        match load_text(dir, name, part) {
            Err(_) => refused += 1,
            Ok(mut c) => {
                if !part.contains("\nGeneration:") {
                    c.generation = whole.generation.clone();
                }
                assert!(
                    c == whole,
                    "{name} cut after {cut} bytes (ends {:?}) trains something else without a word:\n{c:?}\nvs\n{whole:?}",
                    &part[part.len().saturating_sub(40)..]
                );
            }
        }
    }
    refused
}

/// Issue #38 B7: a config cut anywhere (inside `Optimizer:`, `Engine:`, `Data:`,
/// `Generation:`, ...) is refused; it used to train the defaults of what was cut off
/// (`lr 5e-05` instead of gpt_tiny.yaml's 0.003).
#[test]
fn a_config_cut_anywhere_is_refused_or_loads_the_whole_files_run() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(config("gpt_tiny.yaml")).unwrap();
    assert!(every_cut_is_refused_or_the_same(dir.path(), "cut.yaml", &text) > 0);
    // FleetX's layout: the base file cut anywhere under the whole model file.
    let base = std::fs::read_to_string(fleetx("pretrain_gpt_base.yaml")).unwrap();
    std::fs::copy(
        fleetx("pretrain_gpt_tiny_single_card.yaml"),
        dir.path().join("model.yaml"),
    )
    .unwrap();
    std::fs::write(dir.path().join("pretrain_gpt_base.yaml"), &base).unwrap();
    let whole = GptConfig::load_for_training(Some(&dir.path().join("model.yaml")), &[]);
    for cut in cuts(&base) {
        std::fs::write(dir.path().join("pretrain_gpt_base.yaml"), &base[..cut]).unwrap();
        if let Ok(c) = GptConfig::load_for_training(Some(&dir.path().join("model.yaml")), &[]) {
            let whole = whole.as_ref().unwrap();
            assert!(
                c == *whole,
                "the base cut after {cut} bytes (ends {:?}) trains something else without a word",
                &base[cut.saturating_sub(40)..cut]
            );
        }
    }
}

/// The message names the section, the missing keys and the line the file ends at.
#[test]
fn a_config_cut_inside_optimizer_names_the_section_and_its_missing_keys() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(config("gpt_tiny.yaml")).unwrap();
    let part = &text[..text.find("    max_lr:").unwrap()];
    let e =
        load_text(dir.path(), "cut.yaml", part).expect_err("a cut-off Optimizer must not train");
    let line = part.lines().count();
    for want in [
        "`Optimizer` has no lr.max_lr, lr.min_lr, grad_clip",
        &format!("ends at line {line} inside `Optimizer:` — truncated?"),
    ] {
        assert!(e.contains(want), "want {want:?} in {e}");
    }
    // Engine cut after max_steps; Generation cut after top_k.
    let part = &text[..text.find("  num_train_epochs:").unwrap()];
    let e = load_text(dir.path(), "cut.yaml", part).unwrap_err();
    assert!(
        e.contains("`Engine` has no num_train_epochs, logging_freq"),
        "{e}"
    );
    let part = &text[..text.find("  top_p:").unwrap()];
    let e = load_text(dir.path(), "cut.yaml", part).unwrap_err();
    assert!(
        e.contains("`Generation` has no top_p, temperature, min_dec_len, max_dec_len, num_return_sequences, decode_strategy"),
        "{e}"
    );
    // --generate reads the file with `load`: a cut Generation is refused there too.
    let cut = dir.path().join("cut.yaml");
    let e = GptConfig::load(Some(&cut), &[]).unwrap_err().to_string();
    assert!(e.contains("`Generation` has no top_p"), "{e}");
    // Overrides complete a cut section; a section only overrides create is not checked.
    let rest = [
        "top_p=0.75",
        "temperature=1.0",
        "min_dec_len=1",
        "max_dec_len=48",
        "num_return_sequences=1",
        "decode_strategy=sampling",
    ];
    let o: Vec<String> = rest.iter().map(|k| format!("Generation.{k}")).collect();
    GptConfig::load(Some(&cut), &o).unwrap();
    let part = &text[..text.find("Generation:").unwrap()];
    std::fs::write(&cut, part).unwrap();
    GptConfig::load(Some(&cut), &["Generation.top_k=1".into()]).unwrap();
}
