//! The FleetX sections run_gpt reads (`Data`, `Model`, `Optimizer`, `Generation`; `Engine`
//! comes from `model_config::fleetx`), typed with serde so a misspelled key is an error that
//! lists the valid keys, and validated so an option we cannot honour is an error naming it.

use modelzoo_engine::runner::MemoryNeed;
use modelzoo_text::config::{unsupported, ModelSection};
use serde::{Deserialize, Serialize};

// The sections every decoder model shares live in modelzoo-text (run_llama reads them too).
pub use modelzoo_text::config::{
    BatchSize, Data, Dataset, DecodeStrategy, Generation, GradClip, LmConfig, LmConfigError,
    LrSchedule, NamedClip, Optimizer, ResolvedBatch, Unsupported, SECTIONS,
};

/// Every section of a GPT config, typed and validated.
pub type GptConfig = LmConfig<Model>;

/// `Model`: the GPT architecture (FleetX `GPTModel` keys).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Model {
    /// FleetX `module`: `GPTModule` (training), or `GPTGenerationModule` (FleetX's
    /// generation configs, read by `--generate`); `name` must be `GPT`.
    pub module: Option<String>,
    pub name: Option<String>,
    pub vocab_size: i64,
    pub hidden_size: i64,
    pub num_layers: i64,
    pub num_attention_heads: i64,
    /// Default: 4 × hidden_size.
    pub ffn_hidden_size: Option<i64>,
    pub hidden_dropout_prob: f64,
    pub attention_probs_dropout_prob: f64,
    pub max_position_embeddings: i64,
    /// FleetX accepts it but GPT pretraining feeds no token types; must be ≥ 0, unused.
    pub type_vocab_size: i64,
    pub initializer_range: f64,
    /// Activation recompute of every transformer block (FleetX's switch): backward reruns
    /// each block's forward instead of keeping its activations (`device_sdaa::recompute`).
    pub use_recompute: bool,
    /// `full` (or empty): whole blocks are recomputed; nothing finer is implemented.
    pub recompute_granularity: Option<String>,
    /// libtorch's `linear` is already one fused GEMM+bias call (Paddle's `fused_linear` is
    /// the same GEMM with its bias epilogue), so both values compute the same thing.
    pub fused_linear: bool,
    /// Megatron sequence parallelism (with tensor parallelism): not implemented, `True` is
    /// refused.
    pub sequence_parallel: bool,
}

impl Default for Model {
    fn default() -> Self {
        // GPT-2 small (124M) with FleetX's padded vocabulary.
        Model {
            module: None,
            name: None,
            vocab_size: 50304,
            hidden_size: 768,
            num_layers: 12,
            num_attention_heads: 12,
            ffn_hidden_size: None,
            hidden_dropout_prob: 0.1,
            attention_probs_dropout_prob: 0.1,
            max_position_embeddings: 1024,
            type_vocab_size: 16,
            initializer_range: 0.02,
            use_recompute: false,
            recompute_granularity: None,
            fused_linear: false,
            sequence_parallel: false,
        }
    }
}

impl Model {
    /// The MLP width (`ffn_hidden_size`, default 4 × hidden).
    pub fn ffn_hidden(&self) -> i64 {
        self.ffn_hidden_size.unwrap_or(4 * self.hidden_size)
    }

    /// Parameters of the network this section describes, counting the tied embedding once.
    pub fn num_params(&self) -> i64 {
        let (h, f) = (self.hidden_size, self.ffn_hidden());
        let block = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h);
        self.vocab_size * h + self.max_position_embeddings * h + self.num_layers * block + 2 * h
    }

    /// [`Model::num_params`] in 64-bit arithmetic that saturates instead of overflowing, for
    /// sizing configs too large to build (see [`ModelSection::memory_need`]). Call after
    /// [`Model::validate`] (every size positive).
    pub fn num_params_saturating(&self) -> u64 {
        use modelzoo_engine::runner::{bytes, bytes_sum};
        let u = |v: i64| v.max(0) as u64;
        let (h, f) = (u(self.hidden_size), u(self.ffn_hidden_size.unwrap_or(0)));
        let f = if self.ffn_hidden_size.is_some() {
            f
        } else {
            bytes(&[4, h])
        };
        let block = bytes_sum(&[
            bytes(&[4, h]),
            bytes(&[h, 3, h]),
            bytes(&[3, h]),
            bytes(&[h, h]),
            h,
            bytes(&[h, f]),
            f,
            bytes(&[f, h]),
            h,
        ]);
        bytes_sum(&[
            bytes(&[u(self.vocab_size), h]),
            bytes(&[u(self.max_position_embeddings), h]),
            bytes(&[u(self.num_layers), block]),
            bytes(&[2, h]),
        ])
    }

    /// Rejects shapes that cannot build and options we do not implement.
    pub fn validate(&self) -> Result<(), Unsupported> {
        if let Some(name) = &self.name {
            if name != "GPT" {
                return Err(unsupported("Model.name", name, "run_gpt builds only `GPT`"));
            }
        }
        if let Some(module) = &self.module {
            if module != "GPTModule" && module != "GPTGenerationModule" {
                return Err(unsupported(
                    "Model.module",
                    module,
                    "run_gpt implements FleetX's GPTModule (training) and GPTGenerationModule (--generate)",
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
        if let Some(g) = &self.recompute_granularity {
            if !g.is_empty() && g != "full" {
                return Err(unsupported(
                    "Model.recompute_granularity",
                    g,
                    "only `full` (whole transformer blocks) is implemented; leave it empty or set `full`",
                ));
            }
        }
        let positive: [(&'static str, i64); 5] = [
            ("Model.vocab_size", self.vocab_size),
            ("Model.hidden_size", self.hidden_size),
            ("Model.num_layers", self.num_layers),
            ("Model.num_attention_heads", self.num_attention_heads),
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
        if self.ffn_hidden() <= 0 {
            return Err(unsupported(
                "Model.ffn_hidden_size",
                self.ffn_hidden(),
                "must be positive",
            ));
        }
        if self.hidden_size % self.num_attention_heads != 0 {
            return Err(unsupported(
                "Model.hidden_size",
                self.hidden_size,
                format!(
                    "must be divisible by num_attention_heads ({})",
                    self.num_attention_heads
                ),
            ));
        }
        for (key, p) in [
            ("Model.hidden_dropout_prob", self.hidden_dropout_prob),
            (
                "Model.attention_probs_dropout_prob",
                self.attention_probs_dropout_prob,
            ),
        ] {
            if !(0.0..1.0).contains(&p) {
                return Err(unsupported(key, p, "must be in [0, 1)"));
            }
        }
        if self.initializer_range.is_nan() || self.initializer_range <= 0.0 {
            return Err(unsupported(
                "Model.initializer_range",
                self.initializer_range,
                "must be positive",
            ));
        }
        if self.type_vocab_size < 0 {
            return Err(unsupported(
                "Model.type_vocab_size",
                self.type_vocab_size,
                "must not be negative",
            ));
        }
        Ok(())
    }
}

impl ModelSection for Model {
    const PROGRAM: &'static str = "run_gpt";
    const DEFAULTS: &'static str = "the built-in GPT-2 small (124M)";
    const EXAMPLE: &'static str = "modelzoo/gpt/configs/gpt_124m.yaml";
    const REQUIRED_KEYS: &'static [&'static str] = &[
        "vocab_size",
        "hidden_size",
        "num_layers",
        "num_attention_heads",
        "max_position_embeddings",
    ];
    const TRAINING_MODULE: &'static str = "GPTModule";

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
        self.num_params_saturating()
    }

    /// Every block caches its keys and values, `hidden_size` each.
    fn kv_values_per_position(&self) -> u64 {
        modelzoo_engine::runner::bytes(&[
            self.num_layers.max(0) as u64,
            2,
            self.hidden_size.max(0) as u64,
        ])
    }

    /// Per block ([`crate::model`]): the input, ln_1, qkv (3h), attention output, its
    /// contiguous copy and projection, the residual sum, ln_2 and the block output (h each,
    /// 10h in all counting the next block's input), c_fc and GELU (ffn each); the scores and
    /// their softmax (and a mask) over `past + new` positions per head; the layer's keys and
    /// values at `past + new` (the concatenation's new tensors). Then the token and position
    /// embeddings and their sum, ln_f and the logits.
    fn forward_values(&self, batch: u64, new: u64, past: u64) -> u64 {
        use modelzoo_engine::runner::{bytes, bytes_sum};
        let u = |v: i64| v.max(0) as u64;
        let (h, f, heads) = (
            u(self.hidden_size),
            u(self.ffn_hidden()),
            u(self.num_attention_heads),
        );
        let rows = bytes(&[batch, new]);
        let seen = past.saturating_add(new);
        bytes_sum(&[
            bytes(&[rows, bytes_sum(&[bytes(&[10, h]), bytes(&[2, f])])]),
            bytes(&[3, rows, heads, seen]),
            bytes(&[2, batch, seen, h]),
            bytes(&[rows, bytes_sum(&[bytes(&[4, h]), u(self.vocab_size)])]),
        ])
    }

    /// The least memory one training step with micro-batches of `micro` needs (see
    /// `runner::check_memory`), from exact sizes of what it must hold: AdamW training keeps
    /// weights, gradients and two moments in fp32 (16 bytes per parameter); the step holds the
    /// logits and their gradient (micro × max_seq_len × vocab_size fp32 each), and backward
    /// keeps every layer's attention probabilities (micro × heads × max_seq_len²) and residual
    /// stream (micro × max_seq_len × hidden_size), 2 bytes each under autocast — with
    /// `use_recompute` only the residual stream (each block's input). The host holds
    /// a few token batches. Products saturate, so an overflowing size counts as too large.
    fn memory_need(&self, data: &Data, micro: u64, amp: bool) -> MemoryNeed {
        use modelzoo_engine::runner::{bytes, bytes_sum};
        let m = self;
        let seq = data.dataset.max_seq_len;
        let u = |v: i64| v.max(0) as u64;
        let act = if amp { 2 } else { 4 };
        let params = self.num_params_saturating();
        let device = bytes_sum(&[
            bytes(&[params, 16]),
            bytes(&[2, micro, seq, u(m.vocab_size), 4]),
            if m.use_recompute {
                0
            } else {
                bytes(&[
                    u(m.num_layers),
                    micro,
                    u(m.num_attention_heads),
                    seq,
                    seq,
                    act,
                ])
            },
            bytes(&[u(m.num_layers), micro, seq, u(m.hidden_size), act]),
        ]);
        let host = bytes(&[3, micro, seq.saturating_add(1), 8]);
        MemoryNeed {
            host,
            device,
            args: format!(
                "Data.batch_size.micro_batch_size {micro}, Data.dataset.max_seq_len {seq}, Model hidden_size {} num_layers {} num_attention_heads {} vocab_size {} ({} parameters)",
                m.hidden_size,
                m.num_layers,
                m.num_attention_heads,
                m.vocab_size,
                if params == u64::MAX {
                    "over 2^64".to_string()
                } else {
                    params.to_string()
                }
            ),
            counted: "fp32 weights, gradients and AdamW moments, logits, attention probabilities and residual stream of every layer".into(),
        }
    }
}
