//! The FleetX sections run_llama reads: `Model` (the LLaMA architecture, Hugging Face
//! `LlamaConfig` quantities under FleetX key names) is its own; `Data`, `Optimizer` and
//! `Generation` are the zoo's shared decoder sections (`modelzoo_text::config`), `Engine`
//! comes from `model_config::fleetx`. Typed with serde so a misspelled key is an error that
//! lists the valid keys, validated so an option we cannot honour is an error naming it.

use modelzoo_engine::runner::MemoryNeed;
use modelzoo_text::config::{unsupported, ModelSection};
use serde::{Deserialize, Serialize};

pub use modelzoo_text::config::{
    BatchSize, Data, Dataset, DecodeStrategy, Generation, GradClip, LmConfig, LmConfigError,
    LrSchedule, Optimizer, ResolvedBatch, Unsupported, SECTIONS,
};

/// Every section of a LLaMA config, typed and validated.
pub type LlamaConfig = LmConfig<Model>;

/// `Model`: the LLaMA architecture. Keys follow FleetX's GPT section where one exists
/// (`num_layers`, `num_attention_heads`, `ffn_hidden_size`, `attention_probs_dropout_prob`)
/// and Hugging Face `LlamaConfig` otherwise; defaults are `LlamaConfig`'s (LLaMA-2-7B).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Model {
    /// FleetX-style `module` / `name`: `module` must be `LlamaModule`, `name` `Llama` (any
    /// case).
    pub module: Option<String>,
    pub name: Option<String>,
    pub vocab_size: i64,
    pub hidden_size: i64,
    /// Hugging Face `num_hidden_layers`.
    pub num_layers: i64,
    pub num_attention_heads: i64,
    /// Grouped-query attention: key/value heads, dividing `num_attention_heads`
    /// (default: as many as attention heads, i.e. multi-head attention).
    pub num_key_value_heads: Option<i64>,
    /// Hugging Face `intermediate_size`: the SwiGLU width.
    pub ffn_hidden_size: i64,
    pub max_position_embeddings: i64,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    /// The output projection shares the input embedding (`lm_head.weight` is
    /// `model.embed_tokens.weight`).
    pub tie_word_embeddings: bool,
    pub initializer_range: f64,
    /// Hugging Face `attention_dropout`, on the attention probabilities in training.
    pub attention_probs_dropout_prob: f64,
    /// Activation recompute of every decoder layer (FleetX's switch): saves the layers'
    /// activations for one extra forward per layer in backward.
    pub use_recompute: bool,
    /// `full` (or empty): whole decoder layers are recomputed; nothing finer is implemented.
    pub recompute_granularity: Option<String>,
    /// libtorch's `linear` is one GEMM call either way (LLaMA's projections have no bias to
    /// fuse); accepted for FleetX compatibility.
    pub fused_linear: bool,
    /// Megatron sequence parallelism (with tensor parallelism): not implemented, `True` is
    /// refused.
    pub sequence_parallel: bool,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            module: None,
            name: None,
            vocab_size: 32000,
            hidden_size: 4096,
            num_layers: 32,
            num_attention_heads: 32,
            num_key_value_heads: None,
            ffn_hidden_size: 11008,
            max_position_embeddings: 2048,
            rms_norm_eps: 1e-6,
            rope_theta: 10000.0,
            tie_word_embeddings: false,
            initializer_range: 0.02,
            attention_probs_dropout_prob: 0.0,
            use_recompute: false,
            recompute_granularity: None,
            fused_linear: false,
            sequence_parallel: false,
        }
    }
}

impl Model {
    /// Key/value heads (grouped-query attention).
    pub fn kv_heads(&self) -> i64 {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }

    /// Per-head width.
    pub fn head_dim(&self) -> i64 {
        self.hidden_size / self.num_attention_heads
    }

    /// Parameters (the tied embedding counted once), saturating instead of overflowing so
    /// configs too large to build can still be sized (see [`LlamaConfig::memory_need`]).
    pub fn num_params(&self) -> u64 {
        use modelzoo_engine::runner::{bytes, bytes_sum};
        let u = |v: i64| v.max(0) as u64;
        let (h, f) = (u(self.hidden_size), u(self.ffn_hidden_size));
        let kv = bytes(&[u(self.kv_heads()), u(self.head_dim())]);
        let layer = bytes_sum(&[
            bytes(&[2, h]),
            bytes(&[2, h, h]),
            bytes(&[2, h, kv]),
            bytes(&[3, h, f]),
        ]);
        let emb = bytes(&[u(self.vocab_size), h]);
        bytes_sum(&[
            emb,
            if self.tie_word_embeddings { 0 } else { emb },
            bytes(&[u(self.num_layers), layer]),
            h,
        ])
    }

    /// Rejects shapes that cannot build and options we do not implement.
    pub fn validate(&self) -> Result<(), Unsupported> {
        if let Some(name) = &self.name {
            if !name.eq_ignore_ascii_case("llama") {
                return Err(unsupported(
                    "Model.name",
                    name,
                    "run_llama builds only `Llama`",
                ));
            }
        }
        if let Some(module) = &self.module {
            if module != "LlamaModule" {
                return Err(unsupported(
                    "Model.module",
                    module,
                    "run_llama implements `LlamaModule` (training and --generate)",
                ));
            }
        }
        if self.sequence_parallel {
            return Err(unsupported(
                "Model.sequence_parallel",
                true,
                "sequence parallelism (part of tensor parallelism) is not implemented; set it to False",
            ));
        }
        let positive: [(&'static str, i64); 7] = [
            ("Model.vocab_size", self.vocab_size),
            ("Model.hidden_size", self.hidden_size),
            ("Model.num_layers", self.num_layers),
            ("Model.num_attention_heads", self.num_attention_heads),
            ("Model.num_key_value_heads", self.kv_heads()),
            ("Model.ffn_hidden_size", self.ffn_hidden_size),
            (
                "Model.max_position_embeddings",
                self.max_position_embeddings,
            ),
        ];
        for (key, value) in positive {
            if value <= 0 {
                return Err(unsupported(key, value, "must be positive"));
            }
        }
        if self.hidden_size % self.num_attention_heads != 0 || self.head_dim() % 2 != 0 {
            return Err(unsupported(
                "Model.hidden_size",
                self.hidden_size,
                format!(
                    "must be num_attention_heads ({}) × an even head width (rotary embeddings rotate pairs)",
                    self.num_attention_heads
                ),
            ));
        }
        if self.num_attention_heads % self.kv_heads() != 0 {
            return Err(unsupported(
                "Model.num_key_value_heads",
                self.kv_heads(),
                format!(
                    "must divide num_attention_heads ({}): each key/value head serves a group of query heads",
                    self.num_attention_heads
                ),
            ));
        }
        if !(0.0..1.0).contains(&self.attention_probs_dropout_prob) {
            return Err(unsupported(
                "Model.attention_probs_dropout_prob",
                self.attention_probs_dropout_prob,
                "must be in [0, 1)",
            ));
        }
        for (key, v) in [
            ("Model.rms_norm_eps", self.rms_norm_eps),
            ("Model.rope_theta", self.rope_theta),
            ("Model.initializer_range", self.initializer_range),
        ] {
            if !v.is_finite() || v <= 0.0 {
                return Err(unsupported(key, v, "must be a finite number > 0"));
            }
        }
        if let Some(g) = &self.recompute_granularity {
            if !g.is_empty() && g != "full" {
                return Err(unsupported(
                    "Model.recompute_granularity",
                    g,
                    "only `full` (whole decoder layers) is implemented; leave it empty or set `full`",
                ));
            }
        }
        Ok(())
    }
}

impl ModelSection for Model {
    const PROGRAM: &'static str = "run_llama";
    const DEFAULTS: &'static str = "the built-in LLaMA-2-7B shape";
    const EXAMPLE: &'static str = "modelzoo/llama/configs/llama_tiny.yaml";
    const REQUIRED_KEYS: &'static [&'static str] = &[
        "vocab_size",
        "hidden_size",
        "num_layers",
        "num_attention_heads",
        "ffn_hidden_size",
        "max_position_embeddings",
    ];
    const TRAINING_MODULE: &'static str = "LlamaModule";

    fn validate(&self) -> Result<(), Unsupported> {
        Model::validate(self)
    }

    fn module(&self) -> Option<&str> {
        self.module.as_deref()
    }

    fn max_position_embeddings(&self) -> i64 {
        self.max_position_embeddings
    }

    fn vocab_size(&self) -> i64 {
        self.vocab_size
    }

    fn parameters(&self) -> u64 {
        self.num_params()
    }

    /// Every layer caches its keys and values for the key/value heads (before the
    /// grouped-query repeat).
    fn kv_values_per_position(&self) -> u64 {
        let u = |v: i64| v.max(0) as u64;
        modelzoo_engine::runner::bytes(&[
            u(self.num_layers),
            2,
            u(self.kv_heads()),
            u(self.head_dim()),
        ])
    }

    /// Per layer ([`crate::model`]), per new position: the input, RMSNorm's square, product
    /// and scaled output (3h), q with rotary embedding (its projection, the negated half, the
    /// rotated copy, the two products and their sum: 6h), k likewise and v (7 × key/value
    /// width), the attention output, its contiguous copy, projection and residual sum (4h),
    /// the second RMSNorm (3h), the MLP's gate, SiLU, up and product (4 × ffn) with its
    /// projection and residual sum (2h); the scores and their softmax (and a mask) over
    /// `past + new` positions per head; the layer's keys and values at `past + new` (the
    /// concatenation's new tensors) and, with grouped-query attention, their copies repeated
    /// to every head. Then the embedding, the final RMSNorm, the rotary tables and the logits.
    fn forward_values(&self, batch: u64, new: u64, past: u64) -> u64 {
        use modelzoo_engine::runner::{bytes, bytes_sum};
        let u = |v: i64| v.max(0) as u64;
        let (h, f, heads) = (
            u(self.hidden_size),
            u(self.ffn_hidden_size),
            u(self.num_attention_heads),
        );
        let kv = bytes(&[u(self.kv_heads()), u(self.head_dim())]);
        let rows = bytes(&[batch, new]);
        let seen = past.saturating_add(new);
        let repeated = if self.kv_heads() < self.num_attention_heads {
            bytes(&[2, batch, seen, h])
        } else {
            0
        };
        bytes_sum(&[
            bytes(&[
                rows,
                bytes_sum(&[bytes(&[19, h]), bytes(&[7, kv]), bytes(&[4, f]), 1]),
            ]),
            bytes(&[3, rows, heads, seen]),
            bytes(&[2, batch, seen, kv]),
            repeated,
            bytes(&[rows, bytes_sum(&[bytes(&[4, h]), u(self.vocab_size)])]),
            bytes(&[4, new, u(self.head_dim())]),
        ])
    }

    /// The least memory one training step with micro-batches of `micro` needs (see
    /// `runner::check_memory`): fp32 weights, gradients and AdamW moments (16 bytes per
    /// parameter), the logits and their gradient (fp32), and what backward keeps per layer —
    /// without recompute the attention probabilities (micro × heads × seq²) and the residual
    /// stream; with recompute only each layer's input (micro × seq × hidden), 2 bytes per
    /// value under autocast. Products saturate, so an overflowing size counts as too large.
    fn memory_need(&self, data: &Data, micro: u64, amp: bool) -> MemoryNeed {
        use modelzoo_engine::runner::{bytes, bytes_sum};
        let m = self;
        let seq = data.dataset.max_seq_len;
        let u = |v: i64| v.max(0) as u64;
        let act = if amp { 2 } else { 4 };
        let params = m.num_params();
        let per_layer = if m.use_recompute {
            0
        } else {
            bytes(&[micro, u(m.num_attention_heads), seq, seq, act])
        };
        let device = bytes_sum(&[
            bytes(&[params, 16]),
            bytes(&[2, micro, seq, u(m.vocab_size), 4]),
            bytes(&[u(m.num_layers), per_layer]),
            bytes(&[u(m.num_layers), micro, seq, u(m.hidden_size), act]),
        ]);
        let host = bytes(&[3, micro, seq.saturating_add(1), 8]);
        MemoryNeed {
            host,
            device,
            args: format!(
                "Data.batch_size.micro_batch_size {micro}, Data.dataset.max_seq_len {seq}, Model hidden_size {} num_layers {} num_attention_heads {} vocab_size {} use_recompute {} ({} parameters)",
                m.hidden_size,
                m.num_layers,
                m.num_attention_heads,
                m.vocab_size,
                m.use_recompute,
                if params == u64::MAX {
                    "over 2^64".to_string()
                } else {
                    params.to_string()
                }
            ),
            counted: "fp32 weights, gradients and AdamW moments, logits, and the activations backward keeps per layer".into(),
        }
    }
}
