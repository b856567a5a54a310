//! The network: exact GPT-2 parameter count, causal attention, KV-cache decoding equal to the
//! full forward pass, and that it learns the built-in corpus.

use std::path::Path;
use std::sync::Arc;

use modelzoo_gpt::config::{GptConfig, Model};
use modelzoo_gpt::{Gpt, KvCache};
use modelzoo_text::{Corpus, GptDataset, Split, Tokenizer};
use tch::nn::{self, OptimizerConfig};
use tch::{Device, Kind, Tensor};

fn tiny() -> GptConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/gpt_tiny.yaml");
    GptConfig::load(Some(&path), &[]).expect("tiny config")
}

fn numel(vs: &nn::VarStore) -> i64 {
    vs.trainable_variables()
        .iter()
        .map(|t| t.numel() as i64)
        .sum()
}

#[test]
fn gpt2_small_has_124_439_808_parameters() {
    // GPT-2 small as OpenAI released it: vocab 50257, 1024 positions, tied embeddings.
    let model = Model {
        vocab_size: 50257,
        ..Model::default()
    };
    let vs = nn::VarStore::new(Device::Cpu);
    let gpt = Gpt::new(&vs.root(), &model);
    assert_eq!(numel(&vs), 124_439_808);
    assert_eq!(gpt.num_params(), 124_439_808);
    // FleetX pads the vocabulary to 50304 (a multiple of 64 and 128): 47 more rows of 768.
    let vs = nn::VarStore::new(Device::Cpu);
    let gpt = Gpt::new(&vs.root(), &Model::default());
    assert_eq!(numel(&vs), 124_439_808 + 47 * 768);
    assert_eq!(gpt.num_params(), numel(&vs));
    // GPT-2 medium (the seeds' 345M) with vocab 50257: 354,823,168, counted from the config.
    let medium = Model {
        vocab_size: 50257,
        hidden_size: 1024,
        num_layers: 24,
        num_attention_heads: 16,
        ..Model::default()
    };
    assert_eq!(medium.num_params(), 354_823_168);
}

#[test]
fn initialization_follows_initializer_range() {
    let mut m = tiny().model;
    m.hidden_size = 256;
    m.num_layers = 8;
    let vs = nn::VarStore::new(Device::Cpu);
    let _gpt = Gpt::new(&vs.root(), &m);
    let vars = vs.variables();
    let std = |name: &str| vars[name].std(true).double_value(&[]);
    assert!((std("wte.weight") - 0.02).abs() < 0.002);
    assert!((std("h.0.attn.c_attn.weight") - 0.02).abs() < 0.002);
    // Residual projections: 0.02 / sqrt(2 · 8) = 0.005.
    assert!((std("h.3.attn.c_proj.weight") - 0.005).abs() < 0.0005);
    assert!((std("h.3.mlp.c_proj.weight") - 0.005).abs() < 0.0005);
    assert_eq!(
        vars["h.0.ln_1.weight"].mean(Kind::Float).double_value(&[]),
        1.0
    );
    assert_eq!(
        vars["h.0.mlp.c_fc.bias"]
            .abs()
            .sum(Kind::Float)
            .double_value(&[]),
        0.0
    );
}

#[test]
fn incremental_decoding_matches_full_forward() {
    tch::manual_seed(1);
    let m = tiny().model;
    let vs = nn::VarStore::new(Device::Cpu);
    let gpt = Gpt::new(&vs.root(), &m);
    let ids = Tensor::randint(m.vocab_size, [2, 12], (Kind::Int64, Device::Cpu));
    let _g = tch::no_grad_guard();
    let full = gpt.forward(&ids, None, false).unwrap();
    let mut cache = KvCache::new();
    // Prefill 5, then three tokens at once (offset causal mask), then one at a time.
    let mut parts = vec![gpt
        .forward(&ids.narrow(1, 0, 5), Some(&mut cache), false)
        .unwrap()];
    parts.push(
        gpt.forward(&ids.narrow(1, 5, 3), Some(&mut cache), false)
            .unwrap(),
    );
    for t in 8..12 {
        parts.push(
            gpt.forward(&ids.narrow(1, t, 1), Some(&mut cache), false)
                .unwrap(),
        );
    }
    assert_eq!(cache.len(), 12);
    let inc = Tensor::cat(&parts, 1);
    let diff = (&full - &inc).abs().max().double_value(&[]);
    assert!(diff < 1e-4, "max |full - incremental| = {diff}");
    // Too long for the position table: an error, not a panic.
    let err = gpt
        .forward(&ids.narrow(1, 0, 1).repeat([1, 200]), None, false)
        .unwrap_err();
    assert!(err.to_string().contains("max_position_embeddings"), "{err}");
}

#[test]
fn attention_is_causal() {
    tch::manual_seed(2);
    let m = tiny().model;
    let vs = nn::VarStore::new(Device::Cpu);
    let gpt = Gpt::new(&vs.root(), &m);
    let _g = tch::no_grad_guard();
    let a = Tensor::from_slice(&[5i64, 6, 7, 8, 9, 10]).view([1, 6]);
    let b = Tensor::from_slice(&[5i64, 6, 7, 8, 99, 100]).view([1, 6]);
    let la = gpt.forward(&a, None, false).unwrap();
    let lb = gpt.forward(&b, None, false).unwrap();
    let before = (la.narrow(1, 0, 4) - lb.narrow(1, 0, 4))
        .abs()
        .max()
        .double_value(&[]);
    let after = (la.narrow(1, 4, 2) - lb.narrow(1, 4, 2))
        .abs()
        .max()
        .double_value(&[]);
    assert!(
        before < 1e-6,
        "earlier positions saw later tokens: {before}"
    );
    assert!(after > 1e-4, "later positions ignored their input: {after}");
}

/// Cross entropy (nats) of the corpus' byte unigram distribution: what a model that ignores
/// context at best achieves.
fn unigram_entropy(text: &str) -> f64 {
    let mut counts = [0f64; 256];
    for b in text.bytes() {
        counts[b as usize] += 1.0;
    }
    let n: f64 = counts.iter().sum();
    counts
        .iter()
        .filter(|&&c| c > 0.0)
        .map(|&c| -(c / n) * (c / n).ln())
        .sum()
}

/// The model can learn: from ~ln(vocab) to below the corpus' unigram entropy, i.e. it uses
/// context. Plain AdamW steps here test the network only; run_gpt trains through the engine.
#[test]
fn tiny_gpt_learns_the_builtin_corpus() {
    tch::manual_seed(3);
    let cfg = tiny();
    let tok = Tokenizer::load(None).unwrap();
    let corpus = Arc::new(Corpus::open(None, &tok).unwrap());
    let seq = cfg.data.dataset.max_seq_len as usize;
    let train = GptDataset::new(corpus.clone(), "949,50,1", Split::Train, seq, Some(1)).unwrap();
    let valid = GptDataset::new(corpus, "949,50,1", Split::Valid, seq, None).unwrap();
    assert!(valid.len() >= 8, "valid split too small: {}", valid.len());
    let vs = nn::VarStore::new(Device::Cpu);
    let gpt = Gpt::new(&vs.root(), &cfg.model);
    let mut opt = nn::AdamW::default().build(&vs, 3e-3).unwrap();
    let vocab = cfg.model.vocab_size;
    let (x, y) = train.batch(0, 16, vocab).unwrap();
    let first = Gpt::loss(&gpt.forward(&x, None, true).unwrap(), &y).double_value(&[]);
    assert!(
        (first - (vocab as f64).ln()).abs() < 0.3,
        "initial loss {first}"
    );
    for step in 0..100 {
        let (x, y) = train.batch(step, 8, vocab).unwrap();
        let loss = Gpt::loss(&gpt.forward(&x, None, true).unwrap(), &y);
        opt.zero_grad();
        loss.backward();
        opt.clip_grad_norm(1.0);
        opt.step();
    }
    let _g = tch::no_grad_guard();
    let (x, y) = valid.batch(0, 8, vocab).unwrap();
    let val = Gpt::loss(&gpt.forward(&x, None, false).unwrap(), &y).double_value(&[]);
    let h1 = unigram_entropy(modelzoo_text::BUILTIN_CORPUS);
    println!("initial loss {first:.3}, val loss after 100 steps {val:.3}, unigram entropy {h1:.3}");
    assert!(
        val < h1 - 0.3,
        "val loss {val} not below unigram entropy {h1} - 0.3"
    );
}
