//! The FleetX sections run_gpt reads (`Data`, `Model`, `Optimizer`, `Generation`; `Engine`
//! comes from `model_config::fleetx`), typed with serde so a misspelled key is an error that
//! lists the valid keys, and validated so an option we cannot honour is an error naming it.

use std::path::{Path, PathBuf};

use model_config::fleetx::{self, ConfigError, ConfigTree, EngineConfig};
use serde::{Deserialize, Serialize};

/// Sections a GPT config may contain (FleetX names).
pub const SECTIONS: &[&str] = &[
    "Global",
    "Engine",
    "Data",
    "Model",
    "Optimizer",
    "Generation",
    "Fused",
    "Distributed",
    "Profiler",
    "Inference",
];

/// A config value we parse but cannot honour, or values that contradict each other.
#[derive(Debug, thiserror::Error)]
pub enum GptConfigError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A training `-c` file with no sections at all (empty, blank or only comments).
    #[error("{}: the config is empty: training it would silently use the built-in GPT-2 small (124M) for everything; give a complete config (e.g. modelzoo/gpt/configs/gpt_124m.yaml), or leave out -c to train those defaults on purpose", path.display())]
    EmptyFile { path: PathBuf },
    /// A training `-c` file without the `Model` section (truncated, or the wrong file).
    #[error("{}: no `Model` section (found: {}); is the file truncated? run_gpt needs the architecture from the config (see modelzoo/gpt/configs/gpt_124m.yaml); leave out -c to train the built-in GPT-2 small (124M) on purpose", path.display(), found.join(", "))]
    NoModel { path: PathBuf, found: Vec<String> },
    #[error("`{key}` = {value}: {reason}")]
    Unsupported {
        /// Full key path, e.g. `Model.use_recompute`.
        key: &'static str,
        value: String,
        /// Why, and what to do instead.
        reason: String,
    },
}

fn unsupported(key: &'static str, value: impl ToString, reason: impl ToString) -> GptConfigError {
    GptConfigError::Unsupported {
        key,
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

/// `Data`: batch sizes and the dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Data {
    pub batch_size: BatchSize,
    pub dataset: Dataset,
}

/// `Data.batch_size`. `micro_batch_size < local_batch_size` means gradient accumulation
/// (`local / micro` micro-batches per optimizer step); `global = local × data-parallel world`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchSize {
    pub global_batch_size: Option<u64>,
    pub local_batch_size: Option<u64>,
    pub micro_batch_size: u64,
}

impl Default for BatchSize {
    fn default() -> Self {
        BatchSize {
            global_batch_size: None,
            local_batch_size: None,
            micro_batch_size: 8,
        }
    }
}

/// Batch sizes after filling the gaps FleetX fills, for a data-parallel world of `world`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedBatch {
    pub global: u64,
    pub local: u64,
    pub micro: u64,
    /// Micro-batches per optimizer step (`local / micro`).
    pub accumulate_steps: u64,
}

impl BatchSize {
    /// Fills missing sizes (local = global / world, or micro when both are absent) and checks
    /// that they divide evenly, as FleetX does.
    pub fn resolve(&self, world: u64) -> Result<ResolvedBatch, GptConfigError> {
        let micro = self.micro_batch_size;
        if micro == 0 {
            return Err(unsupported(
                "Data.batch_size.micro_batch_size",
                0,
                "must be at least 1",
            ));
        }
        let world = world.max(1);
        let local = match (self.local_batch_size, self.global_batch_size) {
            (Some(l), _) => l,
            (None, Some(g)) => {
                if g % world != 0 {
                    return Err(unsupported(
                        "Data.batch_size.global_batch_size",
                        g,
                        format!("not divisible by the {world} data-parallel processes"),
                    ));
                }
                g / world
            }
            (None, None) => micro,
        };
        let global = self.global_batch_size.unwrap_or(local * world);
        if global != local * world {
            return Err(unsupported(
                "Data.batch_size.global_batch_size",
                global,
                format!(
                    "must equal local_batch_size ({local}) × data-parallel processes ({world})"
                ),
            ));
        }
        if local == 0 || local % micro != 0 {
            return Err(unsupported(
                "Data.batch_size.local_batch_size",
                local,
                format!("must be a positive multiple of micro_batch_size ({micro})"),
            ));
        }
        Ok(ResolvedBatch {
            global,
            local,
            micro,
            accumulate_steps: local / micro,
        })
    }
}

/// `Data.dataset`: where tokens come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Dataset {
    /// FleetX `name`, accepted for compatibility (`GPTDataset`).
    pub name: Option<String>,
    /// A directory (or one file) holding Megatron `*_ids.npy` + `*_idx.npz` pairs, or `.txt` /
    /// `.jsonl` text. Absent: the built-in corpus.
    pub input_dir: Option<PathBuf>,
    /// Train/valid/test proportions, e.g. `'949,50,1'`.
    pub split: String,
    /// Tokens per training sample (each sample reads `max_seq_len + 1`).
    pub max_seq_len: u64,
    /// A Hugging Face `tokenizer.json` for text input; absent: the byte-level tokenizer.
    pub tokenizer: Option<PathBuf>,
    /// Seed of the sample shuffle.
    pub seed: u64,
}

impl Default for Dataset {
    fn default() -> Self {
        Dataset {
            name: None,
            input_dir: None,
            split: "949,50,1".to_string(),
            max_seq_len: 1024,
            tokenizer: None,
            seed: 1234,
        }
    }
}

/// `Model`: the GPT architecture (FleetX `GPTModel` keys).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Model {
    /// FleetX `module` / `name`, accepted for compatibility (`GPTModule` / `GPT`).
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
    /// Activation recomputation; tch exposes no checkpoint API, so `true` is an error.
    pub use_recompute: bool,
    pub recompute_granularity: Option<String>,
    /// libtorch's `linear` is already one fused GEMM+bias call, so both values compute the
    /// same thing.
    pub fused_linear: bool,
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
    /// sizing configs too large to build (see [`GptConfig::memory_need`]). Call after
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
    pub fn validate(&self) -> Result<(), GptConfigError> {
        if let Some(name) = &self.name {
            if name != "GPT" {
                return Err(unsupported("Model.name", name, "run_gpt builds only `GPT`"));
            }
        }
        if self.use_recompute {
            return Err(unsupported(
                "Model.use_recompute",
                true,
                "activation recomputation is not supported (tch has no checkpoint API); set it to False and lower micro_batch_size if memory is short",
            ));
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

/// `Optimizer`: AdamW with a cosine schedule and global-norm clipping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Optimizer {
    /// `AdamW` (FleetX's default); anything else is an error.
    pub name: Option<String>,
    pub weight_decay: f64,
    pub adam_beta1: f64,
    pub adam_beta2: f64,
    pub adam_epsilon: f64,
    pub lr: LrSchedule,
    pub grad_clip: GradClip,
    /// Paddle's tensor fusion; not available, `true` is an error.
    pub tensor_fusion: bool,
}

impl Default for Optimizer {
    fn default() -> Self {
        Optimizer {
            name: None,
            weight_decay: 0.01,
            adam_beta1: 0.9,
            adam_beta2: 0.999,
            adam_epsilon: 1.0e-8,
            lr: LrSchedule::default(),
            grad_clip: GradClip::Norm(1.0),
            tensor_fusion: false,
        }
    }
}

/// `Optimizer.grad_clip`: the seeds write a bare number, newer FleetX configs a mapping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GradClip {
    Norm(f64),
    Named(NamedClip),
}

/// `grad_clip: {name: ClipGradByGlobalNorm, clip_norm: 1.0}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedClip {
    pub name: Option<String>,
    pub clip_norm: f64,
}

impl GradClip {
    /// The global-norm bound; `None` when clipping is off (≤ 0).
    pub fn max_norm(&self) -> Option<f64> {
        let v = match self {
            GradClip::Norm(v) => *v,
            GradClip::Named(n) => n.clip_norm,
        };
        (v > 0.0).then_some(v)
    }
}

/// `Optimizer.lr`: linear warmup then cosine decay from `max_lr` to `min_lr` (FleetX
/// `CosineAnnealingWithWarmupDecay`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LrSchedule {
    pub name: Option<String>,
    pub decay_steps: u64,
    pub warmup_rate: f64,
    pub max_lr: f64,
    pub min_lr: f64,
}

impl Default for LrSchedule {
    fn default() -> Self {
        LrSchedule {
            name: None,
            decay_steps: 360_000,
            warmup_rate: 0.01,
            max_lr: 5.0e-5,
            min_lr: 1.0e-5,
        }
    }
}

impl LrSchedule {
    /// Learning rate for optimizer step `step` (0-based), as FleetX computes it: warmup over
    /// `warmup_rate × decay_steps` steps, cosine to `min_lr` at `decay_steps`, then `min_lr`.
    pub fn lr_at(&self, step: u64) -> f64 {
        self.to_schedule()
            .lr_at(self.max_lr, step, self.decay_steps)
    }

    /// The engine schedule computing this (peak = `max_lr`).
    pub fn to_schedule(&self) -> modelzoo_engine::Schedule {
        modelzoo_engine::Schedule::WarmupCosineDecay {
            warmup_steps: (self.warmup_rate * self.decay_steps as f64).floor() as u64,
            decay_steps: self.decay_steps,
            min_lr: self.min_lr,
        }
    }
}

impl Optimizer {
    /// Rejects optimizers and options we do not implement.
    pub fn validate(&self) -> Result<(), GptConfigError> {
        if let Some(name) = &self.name {
            if !name.eq_ignore_ascii_case("adamw") {
                return Err(unsupported(
                    "Optimizer.name",
                    name,
                    "run_gpt trains with AdamW only",
                ));
            }
        }
        if let Some(name) = &self.lr.name {
            if name != "CosineAnnealingWithWarmupDecay" {
                return Err(unsupported(
                    "Optimizer.lr.name",
                    name,
                    "only CosineAnnealingWithWarmupDecay (linear warmup + cosine) is implemented",
                ));
            }
        }
        if let GradClip::Named(NamedClip {
            name: Some(name), ..
        }) = &self.grad_clip
        {
            if name != "ClipGradByGlobalNorm" {
                return Err(unsupported(
                    "Optimizer.grad_clip.name",
                    name,
                    "only ClipGradByGlobalNorm is implemented",
                ));
            }
        }
        if self.tensor_fusion {
            return Err(unsupported(
                "Optimizer.tensor_fusion",
                true,
                "Paddle tensor fusion has no libtorch equivalent; set it to False",
            ));
        }
        if !(0.0..1.0).contains(&self.adam_beta1) || !(0.0..1.0).contains(&self.adam_beta2) {
            return Err(unsupported(
                "Optimizer.adam_beta1/adam_beta2",
                format!("{}/{}", self.adam_beta1, self.adam_beta2),
                "betas must be in [0, 1)",
            ));
        }
        if !self.lr.max_lr.is_finite()
            || self.lr.max_lr <= 0.0
            || !self.lr.min_lr.is_finite()
            || self.lr.min_lr < 0.0
        {
            return Err(unsupported(
                "Optimizer.lr.max_lr",
                self.lr.max_lr,
                "max_lr must be a finite number > 0 and min_lr a finite number >= 0",
            ));
        }
        if !self.weight_decay.is_finite() || self.weight_decay < 0.0 {
            return Err(unsupported(
                "Optimizer.weight_decay",
                self.weight_decay,
                "must be a finite number >= 0",
            ));
        }
        if !self.adam_epsilon.is_finite() || self.adam_epsilon <= 0.0 {
            return Err(unsupported(
                "Optimizer.adam_epsilon",
                self.adam_epsilon,
                "must be a finite number > 0",
            ));
        }
        if !(0.0..=1.0).contains(&self.lr.warmup_rate) {
            return Err(unsupported(
                "Optimizer.lr.warmup_rate",
                self.lr.warmup_rate,
                "must be in [0, 1]",
            ));
        }
        Ok(())
    }
}

/// How generation picks the next token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecodeStrategy {
    Sampling,
    GreedySearch,
}

/// `Generation`: zero-shot decoding parameters (FleetX names and defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Generation {
    /// Keep the k most likely tokens (0 = no top-k filter).
    pub top_k: i64,
    /// Keep the smallest set of tokens whose probability reaches top_p (1.0 = off).
    pub top_p: f64,
    pub temperature: f64,
    /// End-of-text is suppressed until this many tokens are generated.
    pub min_dec_len: usize,
    pub max_dec_len: usize,
    pub num_return_sequences: usize,
    pub decode_strategy: DecodeStrategy,
}

impl Default for Generation {
    fn default() -> Self {
        Generation {
            top_k: 50,
            top_p: 0.75,
            temperature: 1.0,
            min_dec_len: 1,
            max_dec_len: 200,
            num_return_sequences: 1,
            decode_strategy: DecodeStrategy::Sampling,
        }
    }
}

impl Generation {
    pub fn validate(&self) -> Result<(), GptConfigError> {
        if self.top_k < 0 {
            return Err(unsupported("Generation.top_k", self.top_k, "must be ≥ 0"));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(unsupported(
                "Generation.top_p",
                self.top_p,
                "must be in (0, 1]",
            ));
        }
        if self.temperature.is_nan() || self.temperature <= 0.0 {
            return Err(unsupported(
                "Generation.temperature",
                self.temperature,
                "must be positive",
            ));
        }
        if self.num_return_sequences == 0 {
            return Err(unsupported(
                "Generation.num_return_sequences",
                0,
                "must be at least 1",
            ));
        }
        if self.min_dec_len > self.max_dec_len {
            return Err(unsupported(
                "Generation.min_dec_len",
                self.min_dec_len,
                format!("exceeds max_dec_len ({})", self.max_dec_len),
            ));
        }
        Ok(())
    }
}

/// Every section of a GPT config, typed and validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GptConfig {
    pub engine: EngineConfig,
    pub data: Data,
    pub model: Model,
    pub optimizer: Optimizer,
    pub generation: Generation,
}

impl GptConfig {
    /// [`GptConfig::load`] for training: a `-c` file must describe the model. An empty or
    /// truncated file parses (as nothing, or without its `Model` section) and would otherwise
    /// train the built-in 124M defaults — a different run from the one asked for, and one
    /// that may not fit in memory. Without `-c` the defaults are what the user asked for.
    pub fn load_for_training(
        path: Option<&Path>,
        overrides: &[String],
    ) -> Result<GptConfig, GptConfigError> {
        let mut tree = fleetx::load(path, &[])?;
        if let Some(path) = path {
            let found = tree.section_names();
            if found.is_empty() {
                return Err(GptConfigError::EmptyFile {
                    path: path.to_path_buf(),
                });
            }
            if tree.raw().get("Model").is_none_or(|m| m.is_null()) {
                return Err(GptConfigError::NoModel {
                    path: path.to_path_buf(),
                    found,
                });
            }
        }
        for text in overrides {
            tree.apply_override(text)?;
        }
        GptConfig::from_tree(&tree)
    }

    /// The least memory one training step with micro-batches of `micro` needs (see
    /// `runner::check_memory`), from exact sizes of what it must hold: AdamW training keeps
    /// weights, gradients and two moments in fp32 (16 bytes per parameter); the step holds the
    /// logits and their gradient (micro × max_seq_len × vocab_size fp32 each), and backward
    /// keeps every layer's attention probabilities (micro × heads × max_seq_len²) and residual
    /// stream (micro × max_seq_len × hidden_size), 2 bytes each under autocast. The host holds
    /// a few token batches. Products saturate, so an overflowing size counts as too large.
    pub fn memory_need(&self, micro: u64, amp: bool) -> modelzoo_engine::runner::MemoryNeed {
        use modelzoo_engine::runner::{bytes, bytes_sum, MemoryNeed};
        let m = &self.model;
        let seq = self.data.dataset.max_seq_len;
        let u = |v: i64| v.max(0) as u64;
        let act = if amp { 2 } else { 4 };
        let params = self.model.num_params_saturating();
        let device = bytes_sum(&[
            bytes(&[params, 16]),
            bytes(&[2, micro, seq, u(m.vocab_size), 4]),
            bytes(&[
                u(m.num_layers),
                micro,
                u(m.num_attention_heads),
                seq,
                seq,
                act,
            ]),
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

    /// Reads `-c file` (optional) with `-o` overrides, then validates every section.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<GptConfig, GptConfigError> {
        let tree = fleetx::load(path, overrides)?;
        GptConfig::from_tree(&tree)
    }

    /// Typed sections of an already merged tree.
    pub fn from_tree(tree: &ConfigTree) -> Result<GptConfig, GptConfigError> {
        tree.check_sections(SECTIONS)?;
        let config = GptConfig {
            engine: tree.section("Engine")?.unwrap_or_default(),
            data: tree.section("Data")?.unwrap_or_default(),
            model: tree.section("Model")?.unwrap_or_default(),
            optimizer: tree.section("Optimizer")?.unwrap_or_default(),
            generation: tree.section("Generation")?.unwrap_or_default(),
        };
        config.validate()?;
        Ok(config)
    }

    /// Cross-section checks on top of each section's own.
    pub fn validate(&self) -> Result<(), GptConfigError> {
        self.model.validate()?;
        self.optimizer.validate()?;
        self.generation.validate()?;
        let seq = self.data.dataset.max_seq_len;
        if seq == 0 || seq as i64 > self.model.max_position_embeddings {
            return Err(unsupported(
                "Data.dataset.max_seq_len",
                seq,
                format!(
                    "must be in 1..={} (Model.max_position_embeddings)",
                    self.model.max_position_embeddings
                ),
            ));
        }
        self.data.batch_size.resolve(1)?;
        Ok(())
    }
}
