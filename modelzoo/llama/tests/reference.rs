//! Reference-exact: run_llama's network computes what Hugging Face's `LlamaForCausalLM`
//! computes. tests/hf_reference.py (the workspace's .venv: torch 2.11, transformers) builds
//! one from a small `LlamaConfig` with grouped-query attention (4 query heads sharing 2
//! key/value heads; llama_tiny.yaml's Model section), seeded, and saves its state dict as
//! safetensors with input ids, fp32 logits and a greedy continuation. Here the state dict
//! loads by name into [`Llama`], and its logits must match.
//!
//! Tolerance: max |logit difference| ≤ 1e-5. Both sides run the same fp32 libtorch kernels on
//! the same CPU; what differs is the order of a few operations (RMSNorm, rotary, the GQA
//! repeat), worth a few ulps on logits of magnitude ~1 (seen: ~1e-6); a wrong convention
//! (rotate_half vs interleaved pairs, a missing norm scale, a wrong kv-head mapping) moves
//! them by 0.1 or more.

use std::path::{Path, PathBuf};
use std::process::Command;

use modelzoo_llama::config::{LlamaConfig, Model};
use modelzoo_llama::generate::generate;
use modelzoo_llama::pretrained::{self, PretrainedError};
use modelzoo_llama::Llama;
use modelzoo_text::config::DecodeStrategy;
use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

const TOLERANCE: f64 = 1e-5;

fn tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/llama_tiny.yaml")
}

fn tiny_model(tied: bool, rope_theta: f64) -> Model {
    let mut m = LlamaConfig::load(Some(&tiny()), &[]).unwrap().model;
    m.tie_word_embeddings = tied;
    m.rope_theta = rope_theta;
    m
}

/// Runs tests/hf_reference.py for `m` into `dir`.
fn reference(dir: &Path, m: &Model) {
    let py = modelzoo_testkit::venv_python();
    let config = format!(
        r#"{{"vocab_size":{},"hidden_size":{},"intermediate_size":{},"num_hidden_layers":{},"num_attention_heads":{},"num_key_value_heads":{},"max_position_embeddings":{},"rms_norm_eps":{:e},"rope_theta":{:?},"tie_word_embeddings":{}}}"#,
        m.vocab_size,
        m.hidden_size,
        m.ffn_hidden_size,
        m.num_layers,
        m.num_attention_heads,
        m.kv_heads(),
        m.max_position_embeddings,
        m.rms_norm_eps,
        m.rope_theta,
        m.tie_word_embeddings
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hf_reference.py");
    let o = Command::new(&py)
        .arg(&script)
        .arg(dir)
        .arg(&config)
        .env("OMP_NUM_THREADS", "1")
        .output()
        .expect("run .venv/bin/python");
    assert!(
        o.status.success(),
        "hf_reference.py failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn read(path: &Path) -> std::collections::HashMap<String, Tensor> {
    Tensor::read_safetensors(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .collect()
}

fn check_against_hugging_face(tied: bool, rope_theta: f64) {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny_model(tied, rope_theta);
    reference(dir.path(), &m);
    let refs = read(&dir.path().join("reference.safetensors"));
    let vs = VarStore::new(Device::Cpu);
    let model = Llama::new(&vs.root(), &m);
    pretrained::load(&vs, &dir.path().join("weights.safetensors"), tied).unwrap();
    let ids = &refs["input_ids"];
    let logits = tch::no_grad(|| model.forward(ids, None, false).unwrap());
    let want = &refs["logits"];
    assert_eq!(logits.size(), want.size());
    let diff = (&logits - want).abs().max().double_value(&[]);
    let scale = want.abs().max().double_value(&[]);
    assert!(
        diff <= TOLERANCE,
        "tied={tied} rope_theta={rope_theta}: max |logits - HF| = {diff:e} > {TOLERANCE:e} (|logits| max {scale})"
    );
    assert!(scale > 0.5, "logits too small to test anything: {scale}");
    eprintln!("tied={tied} rope_theta={rope_theta}: max |logits - HF| = {diff:e}");

    // Greedy decoding with the KV cache gives Hugging Face's tokens (it recomputes the full
    // sequence for each token).
    let mut gen = LlamaConfig::load(Some(&tiny()), &[]).unwrap().generation;
    gen.decode_strategy = DecodeStrategy::GreedySearch;
    gen.max_dec_len = 8;
    let prompt: Vec<i64> = Vec::<i64>::try_from(ids.get(0)).unwrap();
    let got = generate(&model, &prompt, &gen, None, 0, &Device::Cpu).unwrap();
    let want: Vec<i64> = Vec::<i64>::try_from(&refs["greedy"]).unwrap();
    assert_eq!(got[0], want, "tied={tied}: greedy tokens vs Hugging Face");
}

#[test]
fn logits_equal_hugging_face_llama_untied() {
    check_against_hugging_face(false, 500000.0);
}

#[test]
fn logits_equal_hugging_face_llama_tied() {
    check_against_hugging_face(true, 10000.0);
}

/// A state dict that does not fit is a clear error naming the tensor: a missing key, a shape
/// from another config, a key the model does not have.
#[test]
fn mismatched_state_dicts_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny_model(false, 10000.0);
    let vs = VarStore::new(Device::Cpu);
    let _model = Llama::new(&vs.root(), &m);
    let mut named: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    let write = |name: &str, tensors: &[(String, Tensor)]| {
        let path = dir.path().join(name);
        Tensor::write_safetensors(tensors, &path).unwrap();
        path
    };
    let key = "model.layers.1.mlp.gate_proj.weight";
    let missing: Vec<_> = named
        .iter()
        .filter(|(n, _)| n != key)
        .map(|(n, t)| (n.clone(), t.shallow_clone()))
        .collect();
    let e = pretrained::load(&vs, &write("missing.safetensors", &missing), false).unwrap_err();
    assert!(
        matches!(&e, PretrainedError::Missing { key: k, .. } if k == key),
        "{e}"
    );
    assert!(e.to_string().contains(key), "{e}");

    let k_proj = "model.layers.0.self_attn.k_proj.weight";
    let reshaped: Vec<_> = named
        .iter()
        .map(|(n, t)| {
            let t = if n == k_proj {
                Tensor::zeros([128, 128], (Kind::Float, Device::Cpu))
            } else {
                t.shallow_clone()
            };
            (n.clone(), t)
        })
        .collect();
    let e = pretrained::load(&vs, &write("shape.safetensors", &reshaped), false).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains(k_proj) && text.contains("[128, 128]") && text.contains("[64, 128]"),
        "{text}"
    );

    let mut extra: Vec<_> = named
        .iter()
        .map(|(n, t)| (n.clone(), t.shallow_clone()))
        .collect();
    extra.push((
        "model.layers.0.self_attn.q_proj.bias".into(),
        Tensor::zeros([128], (Kind::Float, Device::Cpu)),
    ));
    let e = pretrained::load(&vs, &write("extra.safetensors", &extra), false).unwrap_err();
    assert!(e.to_string().contains("q_proj.bias"), "{e}");

    let e = pretrained::load(&vs, &dir.path().join("nope.safetensors"), false).unwrap_err();
    assert!(matches!(e, PretrainedError::Read { .. }), "{e}");
}
