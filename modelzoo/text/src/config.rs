//! The FleetX config sections every decoder language model of the zoo reads the same way
//! (`Data`, `Optimizer`, `Generation`), typed with serde so a misspelled key is an error that
//! lists the valid keys, and validated so an option we cannot honour is an error naming it.
//! The architecture (`Model`) is each model's own ([`ModelSection`]); these live here so
//! `run_gpt` and `run_llama` parse, validate and document them once, and load the whole file the
//! same way ([`LmConfig`]).

use std::path::{Path, PathBuf};

use model_config::fleetx::{self, ConfigError, ConfigTree, EngineConfig};
use modelzoo_engine::runner::MemoryNeed;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A config value we parse but cannot honour, or values that contradict each other.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{key}` = {value}: {reason}")]
pub struct Unsupported {
    /// Full key path, e.g. `Optimizer.name`.
    pub key: &'static str,
    pub value: String,
    /// Why, and what to do instead.
    pub reason: String,
}

/// Builds an [`Unsupported`] (the models' own sections use it too).
pub fn unsupported(key: &'static str, value: impl ToString, reason: impl ToString) -> Unsupported {
    Unsupported {
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
    pub fn resolve(&self, world: u64) -> Result<ResolvedBatch, Unsupported> {
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
    /// Rejects optimizers and options we do not implement; `program` (`run_gpt`) names the
    /// command in the message.
    pub fn validate(&self, program: &str) -> Result<(), Unsupported> {
        if let Some(name) = &self.name {
            if !name.eq_ignore_ascii_case("adamw") {
                return Err(unsupported(
                    "Optimizer.name",
                    name,
                    format!("{program} trains with AdamW only"),
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
    /// Rejects decoding parameters no generation can use.
    pub fn validate(&self) -> Result<(), Unsupported> {
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

/// The architecture section (`Model`) of a decoder language model: what the shared config needs
/// of it. Everything else about a GPT or LLaMA config is common ([`LmConfig`]).
pub trait ModelSection: Default + Clone + PartialEq + Serialize + DeserializeOwned {
    /// The training program, for messages (`run_gpt`).
    const PROGRAM: &'static str;
    /// What a run without `-c` trains, for messages (`the built-in GPT-2 small (124M)`).
    const DEFAULTS: &'static str;
    /// A complete config to point users at (`modelzoo/gpt/configs/gpt_124m.yaml`).
    const EXAMPLE: &'static str;
    /// Rejects shapes that cannot build and options the model does not implement.
    fn validate(&self) -> Result<(), Unsupported>;
    /// The longest sequence the architecture takes (`Data.dataset.max_seq_len` is checked
    /// against it).
    fn max_position_embeddings(&self) -> i64;
    /// The least memory one training step with micro-batches of `micro` needs at `data`'s
    /// sequence length (see `runner::check_memory`), from exact sizes of what it must hold.
    fn memory_need(&self, data: &Data, micro: u64, amp: bool) -> MemoryNeed;
}

/// Sections a decoder language model's config may contain (FleetX names).
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

/// Every section of a decoder language model's config (`M` is its `Model`), typed and
/// validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LmConfig<M> {
    pub engine: EngineConfig,
    pub data: Data,
    pub model: M,
    pub optimizer: Optimizer,
    pub generation: Generation,
}

/// Why a language model's config cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LmConfigError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A value no run can use (any section).
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// A training `-c` file with no sections at all (empty, blank or only comments).
    #[error("{}: the config is empty: training it would silently use {defaults} for everything; give a complete config (e.g. {example}), or leave out -c to train those defaults on purpose", path.display())]
    EmptyFile {
        path: PathBuf,
        defaults: &'static str,
        example: &'static str,
    },
    /// A training `-c` file without the `Model` section (truncated, or the wrong file).
    #[error("{}: no `Model` section (found: {}); is the file truncated? {program} needs the architecture from the config (see {example}); leave out -c to train {defaults} on purpose", path.display(), found.join(", "))]
    NoModel {
        path: PathBuf,
        found: Vec<String>,
        program: &'static str,
        defaults: &'static str,
        example: &'static str,
    },
}

impl<M: ModelSection> LmConfig<M> {
    /// [`LmConfig::load`] for training: a `-c` file must describe the model. An empty or
    /// truncated file parses (as nothing, or without its `Model` section) and would otherwise
    /// train the built-in defaults — a different run from the one asked for, and one that may
    /// not fit in memory. Without `-c` the defaults are what the user asked for.
    pub fn load_for_training(
        path: Option<&Path>,
        overrides: &[String],
    ) -> Result<LmConfig<M>, LmConfigError> {
        let mut tree = fleetx::load(path, &[])?;
        if let Some(path) = path {
            let found = tree.section_names();
            if found.is_empty() {
                return Err(LmConfigError::EmptyFile {
                    path: path.to_path_buf(),
                    defaults: M::DEFAULTS,
                    example: M::EXAMPLE,
                });
            }
            if tree.raw().get("Model").is_none_or(|m| m.is_null()) {
                return Err(LmConfigError::NoModel {
                    path: path.to_path_buf(),
                    found,
                    program: M::PROGRAM,
                    defaults: M::DEFAULTS,
                    example: M::EXAMPLE,
                });
            }
        }
        for text in overrides {
            tree.apply_override(text)?;
        }
        LmConfig::from_tree(&tree)
    }

    /// Reads `-c file` (optional) with `-o` overrides, then validates every section.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<LmConfig<M>, LmConfigError> {
        let tree = fleetx::load(path, overrides)?;
        LmConfig::from_tree(&tree)
    }

    /// Typed sections of an already merged tree.
    pub fn from_tree(tree: &ConfigTree) -> Result<LmConfig<M>, LmConfigError> {
        tree.check_sections(SECTIONS)?;
        let config = LmConfig {
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
    pub fn validate(&self) -> Result<(), Unsupported> {
        self.model.validate()?;
        self.optimizer.validate(M::PROGRAM)?;
        self.generation.validate()?;
        let seq = self.data.dataset.max_seq_len;
        let max = self.model.max_position_embeddings();
        if seq == 0 || seq as i64 > max {
            return Err(unsupported(
                "Data.dataset.max_seq_len",
                seq,
                format!("must be in 1..={max} (Model.max_position_embeddings)"),
            ));
        }
        self.data.batch_size.resolve(1)?;
        Ok(())
    }

    /// See [`ModelSection::memory_need`].
    pub fn memory_need(&self, micro: u64, amp: bool) -> MemoryNeed {
        self.model.memory_need(&self.data, micro, amp)
    }
}
