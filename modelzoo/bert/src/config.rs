//! What a BERT is: the shapes `--model_name` names ([`Variant`]: Google's BERT-Base and
//! BERT-Large, and BERT-Tiny for tests and CI), as Hugging Face `BertConfig` quantities
//! ([`BertConfig`]), the head on top ([`Task`]) and the parameter count transformers reports
//! for each head.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A `--model_name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// Google's BERT-Tiny shape (L=2, H=128, A=2; Turc et al. 2019): tests, CI, demos.
    BertTiny,
    /// BERT-Base (L=12, H=768, A=12, 110M parameters with the 30522-id vocabulary).
    BertBase,
    /// BERT-Large (L=24, H=1024, A=16, 340M parameters with the 30522-id vocabulary).
    BertLarge,
}

impl Variant {
    /// Every variant, in `--model_name` order.
    pub const ALL: [Variant; 3] = [Variant::BertTiny, Variant::BertBase, Variant::BertLarge];

    /// The `--model_name` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Variant::BertTiny => "bert_tiny",
            Variant::BertBase => "bert_base",
            Variant::BertLarge => "bert_large",
        }
    }

    /// The architecture with `vocab_size` word embeddings (Hugging Face `BertConfig`
    /// defaults otherwise: 512 positions, 2 token types, LayerNorm eps 1e-12, init std 0.02).
    pub fn config(self, vocab_size: i64) -> BertConfig {
        let (hidden, layers, heads) = match self {
            Variant::BertTiny => (128, 2, 2),
            Variant::BertBase => (768, 12, 12),
            Variant::BertLarge => (1024, 24, 16),
        };
        BertConfig {
            vocab_size,
            hidden_size: hidden,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            intermediate_size: 4 * hidden,
            max_position_embeddings: 512,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            hidden_dropout_prob: 0.1,
            attention_probs_dropout_prob: 0.1,
            initializer_range: 0.02,
            pad_token_id: 0,
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Variant, String> {
        Variant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                format!("unknown --model_name {s:?}; choose bert_tiny, bert_base or bert_large")
            })
    }
}

/// The head on top of the encoder: what `--task` trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "task")]
pub enum Task {
    /// `BertForPreTraining`: masked-LM (tied decoder) + next-sentence prediction.
    Pretrain,
    /// `BertForSequenceClassification` with `num_labels` classes.
    Classification { num_labels: i64 },
    /// `BertForQuestionAnswering` (SQuAD span extraction; no pooler).
    Squad,
}

impl Task {
    /// From `--task` and `--num_labels`.
    pub fn parse(task: &str, num_labels: i64) -> Result<Task, String> {
        match task {
            "pretrain" => Ok(Task::Pretrain),
            "classification" => Ok(Task::Classification { num_labels }),
            "squad" => Ok(Task::Squad),
            other => Err(format!(
                "unknown --task {other:?}; choose pretrain, classification or squad"
            )),
        }
    }

    /// The `--task` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Task::Pretrain => "pretrain",
            Task::Classification { .. } => "classification",
            Task::Squad => "squad",
        }
    }

    /// The Hugging Face class with this head.
    pub fn hf_class(self) -> &'static str {
        match self {
            Task::Pretrain => "BertForPreTraining",
            Task::Classification { .. } => "BertForSequenceClassification",
            Task::Squad => "BertForQuestionAnswering",
        }
    }

    /// Whether the encoder has its pooler (`bert.pooler.dense`): every head but
    /// question answering's (transformers builds `BertModel(add_pooling_layer=False)` there).
    pub fn has_pooler(self) -> bool {
        !matches!(self, Task::Squad)
    }
}

/// Hugging Face `BertConfig`'s quantities (its key names), absolute position embeddings and
/// erf GELU throughout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BertConfig {
    pub vocab_size: i64,
    pub hidden_size: i64,
    pub num_hidden_layers: i64,
    pub num_attention_heads: i64,
    pub intermediate_size: i64,
    pub max_position_embeddings: i64,
    pub type_vocab_size: i64,
    pub layer_norm_eps: f64,
    pub hidden_dropout_prob: f64,
    pub attention_probs_dropout_prob: f64,
    pub initializer_range: f64,
    /// The `[PAD]` id: its word-embedding row starts at zero and gets no gradient from the
    /// lookup (`nn.Embedding(padding_idx=...)`).
    pub pad_token_id: i64,
}

impl BertConfig {
    /// Per-head width.
    pub fn head_dim(&self) -> i64 {
        self.hidden_size / self.num_attention_heads
    }

    /// Rejects shapes that cannot build.
    pub fn validate(&self) -> Result<(), String> {
        for (key, v) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", self.type_vocab_size),
        ] {
            if v <= 0 {
                return Err(format!("BERT {key} = {v}: must be positive"));
            }
        }
        if self.hidden_size % self.num_attention_heads != 0 {
            return Err(format!(
                "BERT hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if !(0..self.vocab_size).contains(&self.pad_token_id) {
            return Err(format!(
                "the [PAD] id {} is outside the vocabulary ({} ids)",
                self.pad_token_id, self.vocab_size
            ));
        }
        for (key, p) in [
            ("hidden_dropout_prob", self.hidden_dropout_prob),
            (
                "attention_probs_dropout_prob",
                self.attention_probs_dropout_prob,
            ),
        ] {
            if !(0.0..1.0).contains(&p) {
                return Err(format!("BERT {key} = {p}: must be in [0, 1)"));
            }
        }
        Ok(())
    }

    /// Parameters of the encoder's embeddings (word, position, token type, LayerNorm).
    fn embedding_params(&self) -> u64 {
        let u = |v: i64| v.max(0) as u64;
        let h = u(self.hidden_size);
        (u(self.vocab_size) + u(self.max_position_embeddings) + u(self.type_vocab_size)) * h + 2 * h
    }

    /// Parameters of one encoder layer (query/key/value/output projections, intermediate and
    /// output dense layers, two LayerNorms; with biases).
    fn layer_params(&self) -> u64 {
        let u = |v: i64| v.max(0) as u64;
        let (h, i) = (u(self.hidden_size), u(self.intermediate_size));
        4 * (h * h + h) + (h * i + i) + (i * h + h) + 2 * 2 * h
    }

    /// Trainable parameters of the model with `task`'s head, each counted once (the MLM
    /// decoder shares the word embedding; its bias is `cls.predictions.bias`): what
    /// transformers' `sum(p.numel() for p in model.parameters())` reports.
    pub fn num_params(&self, task: Task) -> u64 {
        let u = |v: i64| v.max(0) as u64;
        let h = u(self.hidden_size);
        let encoder = self.embedding_params() + u(self.num_hidden_layers) * self.layer_params();
        let pooler = if task.has_pooler() { h * h + h } else { 0 };
        let head = match task {
            // transform dense + LayerNorm, decoder bias, next-sentence classifier
            Task::Pretrain => (h * h + h) + 2 * h + u(self.vocab_size) + (2 * h + 2),
            Task::Classification { num_labels } => u(num_labels) * (h + 1),
            Task::Squad => 2 * h + 2,
        };
        encoder + pooler + head
    }

    /// Training FLOPs per token at sequence length `seq` for `task`: 6 × the matmul weights a
    /// token passes through (encoder layers; the MLM head's transform and tied decoder only
    /// for the `mlm_fraction` of tokens that are predicted; the span head for squad) plus
    /// 12·L·h·seq for attention (the PaLM / nanoGPT MFU formula). Embedding lookups, the
    /// pooler and the sentence-level heads (once per sequence) are not counted.
    pub fn train_flops_per_token(&self, task: Task, seq: i64, mlm_fraction: f64) -> f64 {
        let (h, i, l) = (
            self.hidden_size as f64,
            self.intermediate_size as f64,
            self.num_hidden_layers as f64,
        );
        let per_layer = 4.0 * h * h + 2.0 * h * i;
        let head = match task {
            Task::Pretrain => mlm_fraction * (h * h + h * self.vocab_size as f64),
            Task::Classification { .. } => 0.0,
            Task::Squad => 2.0 * h,
        };
        6.0 * (l * per_layer + head) + 12.0 * l * h * seq as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse_and_validate() {
        for v in Variant::ALL {
            assert_eq!(v.name().parse::<Variant>().unwrap(), v);
            v.config(30522).validate().unwrap();
        }
        assert!("bert_huge".parse::<Variant>().is_err());
        let mut c = Variant::BertTiny.config(100);
        c.num_attention_heads = 3;
        assert!(c.validate().unwrap_err().contains("multiple"));
    }

    #[test]
    fn the_published_sizes() {
        // transformers 5.23's `sum(p.numel() for p in model.parameters())` with the
        // 30522-id vocabulary (tests/parameters.rs recomputes them with transformers).
        let base = Variant::BertBase.config(30522);
        let large = Variant::BertLarge.config(30522);
        assert_eq!(base.num_params(Task::Pretrain), 110_106_428);
        assert_eq!(base.num_params(Task::Squad), 108_893_186);
        assert_eq!(large.num_params(Task::Pretrain), 336_226_108);
        let two = Task::Classification { num_labels: 2 };
        assert_eq!(large.num_params(two), 335_143_938);
    }
}
