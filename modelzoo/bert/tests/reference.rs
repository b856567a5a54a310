//! Reference-exact: run_bert's network computes what Hugging Face's BERT computes.
//! tests/hf_reference.py (the workspace's .venv: torch 2.11, transformers) builds
//! `BertForPreTraining`, `BertForSequenceClassification` (3 labels) and
//! `BertForQuestionAnswering` from a small `BertConfig`, perturbs every parameter, and saves
//! each state dict as safetensors with a padded input batch (token types, attention mask) and
//! its fp32 logits. Here each state dict loads by name (`--pretrained`'s loader) into
//! [`Bert`] with the same head, and the logits must match; a bare `BertModel` with the old
//! `LayerNorm.gamma` / `.beta` names loads into a classifier (head starting fresh) and gives
//! the same hidden states.
//!
//! Tolerance: max |logit difference| ≤ 1e-5. Both sides run the same fp32 libtorch kernels
//! on the same CPU (sdpa with a boolean padding mask, erf GELU, LayerNorm eps 1e-12); what
//! differs is the order of a few operations (the embedding sum, the gathered MLM rows),
//! worth a few ulps on logits of magnitude ~1 (seen: ~1e-6). A wrong convention (tanh GELU,
//! unmasked padding, a missing token-type embedding, an untied decoder) moves them by 1e-3
//! or more.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use modelzoo_bert::pretrained::Weights;
use modelzoo_bert::{Bert, BertConfig, Inputs, Task};
use tch::nn::VarStore;
use tch::{Device, Tensor};

const TOLERANCE: f64 = 1e-5;

fn config() -> BertConfig {
    BertConfig {
        vocab_size: 99,
        hidden_size: 32,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        intermediate_size: 48,
        max_position_embeddings: 40,
        type_vocab_size: 2,
        layer_norm_eps: 1e-12,
        hidden_dropout_prob: 0.1,
        attention_probs_dropout_prob: 0.1,
        initializer_range: 0.02,
        pad_token_id: 0,
    }
}

/// The `BertConfig` keyword arguments of [`config`].
fn kwargs(c: &BertConfig) -> String {
    format!(
        r#"{{"vocab_size":{},"hidden_size":{},"num_hidden_layers":{},"num_attention_heads":{},"intermediate_size":{},"max_position_embeddings":{},"type_vocab_size":{}}}"#,
        c.vocab_size,
        c.hidden_size,
        c.num_hidden_layers,
        c.num_attention_heads,
        c.intermediate_size,
        c.max_position_embeddings,
        c.type_vocab_size
    )
}

fn reference(dir: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hf_reference.py");
    let o = Command::new(modelzoo_testkit::venv_python())
        .arg(&script)
        .arg("logits")
        .arg(dir)
        .arg(kwargs(&config()))
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

fn read(path: &Path) -> HashMap<String, Tensor> {
    Tensor::read_safetensors(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .collect()
}

/// A model of `task` with the weights of `file` loaded.
fn load(file: &Path, task: Task) -> (VarStore, Bert, modelzoo_bert::pretrained::LoadReport) {
    let vs = VarStore::new(Device::Cpu);
    let bert = Bert::new(&vs.root(), &config(), task);
    let report = Weights::read(file)
        .unwrap()
        .load_into(&vs, "test")
        .unwrap_or_else(|e| panic!("{e}"));
    (vs, bert, report)
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.size(), b.size());
    (a - b).abs().max().double_value(&[])
}

#[test]
fn logits_of_the_three_heads_match_transformers() {
    let dir = tempfile::tempdir().unwrap();
    reference(dir.path());
    let file = |name: &str| dir.path().join(name);
    let ref_of = |class: &str| read(&file(&format!("{class}.reference.safetensors")));

    let r = ref_of("BertForPreTraining");
    let input = Inputs {
        ids: &r["input_ids"],
        token_type_ids: Some(&r["token_type_ids"]),
        attention_mask: Some(&r["attention_mask"]),
    };
    let (_vs, bert, report) = load(&file("BertForPreTraining.safetensors"), Task::Pretrain);
    assert!(
        report.fresh.is_empty() && report.ignored.is_empty(),
        "{report:?}"
    );
    let (mlm, nsp) = tch::no_grad(|| bert.pretraining(input, None, false)).unwrap();
    let d = max_diff(&mlm, &r["prediction_logits"]);
    assert!(d <= TOLERANCE, "prediction_logits differ by {d}");
    let d = max_diff(&nsp, &r["seq_relationship_logits"]);
    assert!(d <= TOLERANCE, "seq_relationship_logits differ by {d}");
    // The gathered rows (what training computes) are the same numbers.
    let rows = Tensor::from_slice(&[3i64, 30, 40]);
    let (gathered, _) = tch::no_grad(|| bert.pretraining(input, Some(&rows), false)).unwrap();
    let full = mlm.view([-1, config().vocab_size]).index_select(0, &rows);
    let d = max_diff(&gathered, &full);
    assert!(d <= 1e-6, "gathered MLM rows differ by {d}");

    let r = ref_of("BertForSequenceClassification");
    let (_vs, bert, _) = load(
        &file("BertForSequenceClassification.safetensors"),
        Task::Classification { num_labels: 3 },
    );
    let logits = tch::no_grad(|| bert.classify(input, false)).unwrap();
    let d = max_diff(&logits, &r["logits"]);
    assert!(d <= TOLERANCE, "classification logits differ by {d}");

    let r = ref_of("BertForQuestionAnswering");
    let (_vs, bert, _) = load(&file("BertForQuestionAnswering.safetensors"), Task::Squad);
    let (start, end) = tch::no_grad(|| bert.answer_spans(input, false)).unwrap();
    let d = max_diff(&start, &r["start_logits"]).max(max_diff(&end, &r["end_logits"]));
    assert!(d <= TOLERANCE, "span logits differ by {d}");

    // A bare BertModel with LayerNorm gamma / beta names: the encoder loads into a classifier
    // (its head starts fresh) and gives transformers' hidden states.
    let r = ref_of("BertForPreTraining");
    let (_vs, bert, report) = load(
        &file("legacy.safetensors"),
        Task::Classification { num_labels: 3 },
    );
    assert_eq!(report.fresh, ["classifier.bias", "classifier.weight"]);
    let hidden = tch::no_grad(|| bert.encode(input, false)).unwrap();
    let d = max_diff(&hidden, &r["last_hidden_state"]);
    assert!(d <= TOLERANCE, "hidden states differ by {d}");

    // Pretraining weights into a question-answering model: pooler and cls.* left out.
    let (_vs, _bert, report) = load(&file("BertForPreTraining.safetensors"), Task::Squad);
    assert_eq!(report.fresh, ["qa_outputs.bias", "qa_outputs.weight"]);
    assert!(report
        .ignored
        .iter()
        .any(|k| k == "cls.seq_relationship.weight"));
    assert!(report
        .ignored
        .iter()
        .any(|k| k == "bert.pooler.dense.weight"));
}

#[test]
fn weights_that_do_not_fit_are_named() {
    let dir = tempfile::tempdir().unwrap();
    reference(dir.path());
    let file = dir.path().join("BertForPreTraining.safetensors");
    let mut other = config();
    other.vocab_size = 120;
    let vs = VarStore::new(Device::Cpu);
    let _ = Bert::new(&vs.root(), &other, Task::Pretrain);
    let e = Weights::read(&file)
        .unwrap()
        .load_into(&vs, "bert_tiny")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("word_embeddings") && e.contains("--vocab_size 99"),
        "{e}"
    );
    let mut other = config();
    other.num_hidden_layers = 3;
    let vs = VarStore::new(Device::Cpu);
    let _ = Bert::new(&vs.root(), &other, Task::Pretrain);
    let e = Weights::read(&file)
        .unwrap()
        .load_into(&vs, "bert_tiny")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bert.encoder.layer.2") && e.contains("not --model_name bert_tiny's shape"),
        "{e}"
    );
    let junk = dir.path().join("junk.safetensors");
    std::fs::write(&junk, b"not a state dict").unwrap();
    let e = Weights::read(&junk).err().unwrap().to_string();
    assert!(
        e.contains("junk.safetensors") && e.contains("not a safetensors"),
        "{e}"
    );
}
