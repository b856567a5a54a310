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
