//! The FleetX config sections every decoder language model of the zoo reads the same way
//! (`Global`, `Data`, `Optimizer`, `Generation`, `Distributed`, `Profiler`, `Fused`), typed with
//! serde so a misspelled key is an error that lists the valid keys, and validated so an option
//! we cannot honour is an error naming it: every key is applied or refused, never ignored.
//! The architecture (`Model`) is each model's own ([`ModelSection`]); these live here so
//! `run_gpt` and `run_llama` parse, validate and document them once, and load the whole file the
//! same way ([`LmConfig`]).
//!
//! Two layouts are read: the seeds' (`Data.batch_size`, `Data.dataset`) and FleetX's current one
//! (`Global.*_batch_size`, `Data.Train` / `Data.Eval`, usually through `_base_`); both resolve to
//! the same [`Data`].

use std::path::{Path, PathBuf};

use model_config::fleetx::{self, AmpOp, ConfigError, ConfigTree, EngineConfig};
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

/// `Data`: batch sizes and the dataset, resolved from either layout (see [`DataSection`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Data {
    pub batch_size: BatchSize,
    pub dataset: Dataset,
}

/// `Data` as a file writes it: the seeds' layout (`batch_size`, `dataset`) or FleetX's
/// (`Train` / `Eval`, each a dataset, sampler and loader, with the batch sizes in `Global`).
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct DataSection {
    pub batch_size: Option<BatchSizeSection>,
    pub dataset: Option<Dataset>,
    #[serde(rename = "Train")]
    pub train: Option<DataStage>,
    #[serde(rename = "Eval")]
    pub eval: Option<DataStage>,
}

/// `Data.batch_size` as written: every size optional, so a size given here can be told from
/// one left to `Global` or the default.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct BatchSizeSection {
    pub global_batch_size: Option<u64>,
    pub local_batch_size: Option<u64>,
    pub micro_batch_size: Option<u64>,
}

/// `Data.Train` / `Data.Eval` (FleetX): the dataset, how it is sampled and loaded.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct DataStage {
    pub dataset: Option<Dataset>,
    pub sampler: Sampler,
    pub loader: Loader,
}

/// `Data.Train.sampler`: FleetX's `GPTBatchSampler` without a reshuffle, dropping the last
/// partial batch — what our Megatron-style dataset does (its samples are already shuffled).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Sampler {
    pub name: Option<String>,
    pub shuffle: bool,
    pub drop_last: bool,
}

impl Default for Sampler {
    fn default() -> Self {
        Sampler {
            name: None,
            shuffle: false,
            drop_last: true,
        }
    }
}

/// `Data.Train.loader`: Paddle DataLoader options. Token batches are built on the training
/// thread (an index into the memory-mapped tokens per sample), so `num_workers` and
/// `return_list` change nothing; `collate_fn` must be FleetX's `gpt_collate_fn` (stacking
/// samples into a batch), which is what ours does.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Loader {
    pub num_workers: Option<u64>,
    pub return_list: Option<bool>,
    pub collate_fn: Option<String>,
}

/// `value (file:line)`: a value and where it was set, for messages about two places.
fn located(tree: &ConfigTree, path: &[&str], value: impl std::fmt::Display) -> String {
    format!("{value} ({})", tree.origin(path))
}

impl Sampler {
    fn validate(&self, stage: &'static str) -> Result<(), Unsupported> {
        let key = |k: &'static str| -> &'static str {
            match (stage, k) {
                ("Train", "name") => "Data.Train.sampler.name",
                ("Train", "shuffle") => "Data.Train.sampler.shuffle",
                ("Train", _) => "Data.Train.sampler.drop_last",
                (_, "name") => "Data.Eval.sampler.name",
                (_, "shuffle") => "Data.Eval.sampler.shuffle",
                _ => "Data.Eval.sampler.drop_last",
            }
        };
        if let Some(name) = self.name.as_deref().filter(|n| *n != "GPTBatchSampler") {
            return Err(unsupported(
                key("name"),
                name,
                "only GPTBatchSampler (consecutive batches of the shuffled samples) is implemented",
            ));
        }
        if self.shuffle {
            return Err(unsupported(
                key("shuffle"),
                true,
                "an extra reshuffle of the batches is not implemented (the dataset's samples are already shuffled with Data.dataset.seed); set it to False",
            ));
        }
        if !self.drop_last {
            return Err(unsupported(
                key("drop_last"),
                false,
                "a last partial batch is always dropped (every batch holds micro_batch_size samples); set it to True",
            ));
        }
        Ok(())
    }
}

impl Loader {
    fn validate(&self, stage: &'static str) -> Result<(), Unsupported> {
        match self.collate_fn.as_deref() {
            None | Some("gpt_collate_fn") => Ok(()),
            Some(other) => Err(unsupported(
                if stage == "Train" {
                    "Data.Train.loader.collate_fn"
                } else {
                    "Data.Eval.loader.collate_fn"
                },
                other,
                "batches are collated as FleetX's gpt_collate_fn does (samples stacked); leave it empty or set gpt_collate_fn",
            )),
        }
    }
}

impl DataSection {
    /// The [`Data`] this section and `Global` describe, in either layout. A size given in
    /// both `Global` and `Data.batch_size`, or a dataset in both `Data.dataset` and
    /// `Data.Train.dataset`, must agree; `Data.Eval` must name the training data (we evaluate
    /// on its validation split); samplers and loaders must be ones we implement.
    pub fn resolve(&self, global: &Global, tree: &ConfigTree) -> Result<Data, Unsupported> {
        let given = self.batch_size.clone().unwrap_or_default();
        let pick = |name: &'static str,
                    global_key: &'static str,
                    data_key: &'static str,
                    g: Option<u64>,
                    d: Option<u64>|
         -> Result<Option<u64>, Unsupported> {
            match (g, d) {
                (Some(g), Some(d)) if g != d => Err(unsupported(
                    global_key,
                    located(tree, &["Global", name], g),
                    format!(
                        "{data_key} = {} disagrees; give the batch size in one place (FleetX's layout keeps it in Global)",
                        located(tree, &["Data", "batch_size", name], d)
                    ),
                )),
                (g, d) => Ok(g.or(d)),
            }
        };
        let batch_size = BatchSize {
            global_batch_size: pick(
                "global_batch_size",
                "Global.global_batch_size",
                "Data.batch_size.global_batch_size",
                global.global_batch_size,
                given.global_batch_size,
            )?,
            local_batch_size: pick(
                "local_batch_size",
                "Global.local_batch_size",
                "Data.batch_size.local_batch_size",
                global.local_batch_size,
                given.local_batch_size,
            )?,
            micro_batch_size: pick(
                "micro_batch_size",
                "Global.micro_batch_size",
                "Data.batch_size.micro_batch_size",
                global.micro_batch_size,
                given.micro_batch_size,
            )?
            .unwrap_or(BatchSize::default().micro_batch_size),
        };
        let train = self.train.clone().unwrap_or_default();
        let dataset = match (&self.dataset, &train.dataset) {
            (Some(_), Some(_)) => {
                return Err(unsupported(
                    "Data.Train.dataset",
                    located(tree, &["Data", "Train", "dataset"], "given"),
                    format!(
                        "Data.dataset is given too ({}); describe the training data in one place (Data.dataset in the seeds' layout, Data.Train.dataset in FleetX's)",
                        tree.origin(&["Data", "dataset"])
                    ),
                ))
            }
            (Some(d), None) | (None, Some(d)) => d.clone(),
            (None, None) => Dataset::default(),
        };
        if let Some(stage) = &self.train {
            stage.sampler.validate("Train")?;
            stage.loader.validate("Train")?;
        }
        if let Some(eval) = &self.eval {
            eval.sampler.validate("Eval")?;
            eval.loader.validate("Eval")?;
            if let Some(e) = &eval.dataset {
                let same = e.input_dir == dataset.input_dir
                    && split_key(&e.split) == split_key(&dataset.split)
                    && e.max_seq_len == dataset.max_seq_len
                    && e.tokenizer == dataset.tokenizer;
                if !same {
                    return Err(unsupported(
                        "Data.Eval.dataset",
                        located(tree, &["Data", "Eval", "dataset"], e.describe()),
                        format!(
                            "evaluation runs on the validation part of the training data's split, so it must name the same data ({}); a separate evaluation set is not implemented",
                            dataset.describe()
                        ),
                    ));
                }
            }
        }
        Ok(Data {
            batch_size,
            dataset,
        })
    }
}

/// A split written `'949,50,1'`, `949, 50, 1` or `[949, 50, 1]`, for comparison.
fn split_key(split: &str) -> String {
    split.chars().filter(|c| !c.is_whitespace()).collect()
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
    /// Train/valid/test proportions: `'949,50,1'` (the seeds) or `[949, 50, 1]` (FleetX).
    #[serde(deserialize_with = "split_text")]
    pub split: String,
    /// Tokens per training sample (each sample reads `max_seq_len + 1`).
    pub max_seq_len: u64,
    /// A Hugging Face `tokenizer.json` for text input; absent: the byte-level tokenizer.
    pub tokenizer: Option<PathBuf>,
    /// Seed of the sample shuffle.
    pub seed: u64,
}

impl Dataset {
    /// `input_dir ./data, split 949,50,1, max_seq_len 1024` for messages.
    fn describe(&self) -> String {
        let dir = match &self.input_dir {
            Some(d) => d.display().to_string(),
            None => "empty (the built-in corpus)".into(),
        };
        let tok = match &self.tokenizer {
            Some(t) => format!(", tokenizer {}", t.display()),
            None => String::new(),
        };
        format!(
            "input_dir {dir}, split {}, max_seq_len {}{tok}",
            self.split, self.max_seq_len
        )
    }
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

/// `Data.dataset.split` as a string: FleetX writes a list of proportions (`[949, 50, 1]`),
/// the seeds a string (`'949,50,1'`).
fn split_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Split {
        Text(String),
        Parts(Vec<f64>),
        Empty(()),
    }
    match Split::deserialize(d).map_err(|_| {
        serde::de::Error::custom(
            "expected the train/valid/test proportions as a string ('949,50,1') or a list of numbers ([949, 50, 1])",
        )
    })? {
        Split::Text(t) => Ok(t),
        Split::Empty(()) => Ok(Dataset::default().split),
        Split::Parts(parts) => Ok(parts
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(",")),
    }
}

/// `Optimizer`: AdamW with a cosine schedule and global-norm clipping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Optimizer {
    /// `AdamW`, or FleetX's `FusedAdamW` (the same update, Paddle's fused kernel); anything
    /// else is an error.
    pub name: Option<String>,
    pub weight_decay: f64,
    /// FleetX's current configs spell the three `beta1`, `beta2`, `epsilon`; both are read
    /// (giving both spellings is an error).
    #[serde(alias = "beta1")]
    pub adam_beta1: f64,
    #[serde(alias = "beta2")]
    pub adam_beta2: f64,
    #[serde(alias = "epsilon")]
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
            if !name.eq_ignore_ascii_case("adamw") && !name.eq_ignore_ascii_case("fusedadamw") {
                return Err(unsupported(
                    "Optimizer.name",
                    name,
                    format!("{program} trains with AdamW only (AdamW or FleetX's FusedAdamW)"),
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

/// `Global` (FleetX's current layout): the run's device, seed and batch sizes. The batch sizes
/// fill `Data.batch_size` ([`DataSection::resolve`]); `seed` is the run's seed unless `--seed`
/// is typed; `device` must agree with the run's device unless `--device` is typed
/// ([`Global::check_device`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Global {
    pub device: Option<String>,
    pub seed: Option<u64>,
    pub global_batch_size: Option<u64>,
    pub local_batch_size: Option<u64>,
    pub micro_batch_size: Option<u64>,
}

impl Global {
    /// `Global.device` as the `--device` kind it means: FleetX's `gpu` is `cuda`; `cpu`,
    /// `cuda` and `sdaa` as they are. FleetX's `xpu` / `npu` and anything else are refused.
    pub fn device_kind(&self) -> Result<Option<&'static str>, Unsupported> {
        let Some(device) = self.device.as_deref() else {
            return Ok(None);
        };
        match device.to_ascii_lowercase().as_str() {
            "gpu" | "cuda" => Ok(Some("cuda")),
            "cpu" => Ok(Some("cpu")),
            "sdaa" => Ok(Some("sdaa")),
            "xpu" | "npu" => Err(unsupported(
                "Global.device",
                device,
                "Kunlun XPU / Ascend NPU are not devices this kit runs on; use gpu (CUDA), sdaa or cpu",
            )),
            _ => Err(unsupported(
                "Global.device",
                device,
                "valid: gpu (CUDA), sdaa, cpu",
            )),
        }
    }

    /// A `Global.device` that disagrees with the run's `--device` is an error saying which
    /// `--device` to pass — unless `--device` was typed (`device_typed`): flags win over
    /// every config key.
    pub fn check_device(&self, run_device: &str, device_typed: bool) -> Result<(), Unsupported> {
        let Some(kind) = self.device_kind()? else {
            return Ok(());
        };
        let run_kind = run_device.split(':').next().unwrap_or(run_device);
        if device_typed || run_kind == kind {
            return Ok(());
        }
        Err(unsupported(
            "Global.device",
            self.device.as_deref().unwrap_or_default(),
            format!(
                "the config asks for {kind}, but this run is on the default --device {run_device}: pass --device {kind} (or --device {run_device} to run there anyway: the flag wins over Global.device)"
            ),
        ))
    }
}

/// `Distributed` (FleetX): the parallelism the config was written for. Only data parallelism
/// is implemented (`--nproc_per_node` / `--nnode`); a config asking for more would train on
/// one process without a word, so it is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Distributed {
    /// Data-parallel degree: must equal the run's data-parallel world (1 when not launched
    /// data-parallel); empty = whatever the run has.
    pub dp_degree: Option<u64>,
    pub mp_degree: Option<u64>,
    pub pp_degree: Option<u64>,
    pub sharding: Sharding,
}

/// `Distributed.sharding` (FleetX's ZeRO).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Sharding {
    pub sharding_degree: Option<u64>,
    pub sharding_stage: Option<u64>,
    pub sharding_offload: bool,
}

const NOT_PARALLEL: &str = "tensor/pipeline parallelism and ZeRO sharding are not implemented: this config would train on one process; set it to 1 (data parallelism: --nproc_per_node / --nnode, see docs/ddp.md)";

impl Distributed {
    /// Refuses model, pipeline and sharding parallelism.
    pub fn validate(&self) -> Result<(), Unsupported> {
        let s = &self.sharding;
        for (key, v) in [
            ("Distributed.mp_degree", self.mp_degree),
            ("Distributed.pp_degree", self.pp_degree),
            ("Distributed.sharding.sharding_degree", s.sharding_degree),
        ] {
            if let Some(v) = v.filter(|&v| v > 1) {
                return Err(unsupported(key, v, NOT_PARALLEL));
            }
        }
        if s.sharding_offload {
            return Err(unsupported(
                "Distributed.sharding.sharding_offload",
                true,
                "ZeRO offload is not implemented (optimizer state stays on the device); set it to False",
            ));
        }
        if self.dp_degree == Some(0) {
            return Err(unsupported(
                "Distributed.dp_degree",
                0,
                "must be at least 1 (or empty)",
            ));
        }
        Ok(())
    }

    /// `dp_degree` against the data-parallel world the run was launched with.
    pub fn check_world(&self, world: usize) -> Result<(), Unsupported> {
        match self.dp_degree {
            Some(dp) if dp != world as u64 => Err(unsupported(
                "Distributed.dp_degree",
                dp,
                format!(
                    "this run has {world} data-parallel process(es); launch {dp} with --nproc_per_node / --nnode (docs/ddp.md), or set dp_degree to {world} (or leave it empty)"
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// `Profiler` (FleetX): Paddle's profiler. Off is accepted (its other keys are then inert, as
/// in FleetX); on is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Profiler {
    pub enable: bool,
    pub scheduler: Option<Vec<u64>>,
    pub profiler_log: Option<String>,
    pub detailed: bool,
}

impl Profiler {
    pub fn validate(&self) -> Result<(), Unsupported> {
        if self.enable {
            return Err(unsupported(
                "Profiler.enable",
                true,
                "Paddle's profiler is not available; set it to False and use torch's profiler (PyTorch's Kineto) around the run, or --dump for one step's tensors",
            ));
        }
        Ok(())
    }
}

/// `Fused` (older FleetX configs): Paddle's tensor fusion, not available.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Fused {
    pub tensor_fusion: bool,
}

/// What mixed precision does with the Paddle ops FleetX configs put in
/// `Engine.mix_precision.custom_black_list` / `custom_white_list`, in run_gpt's and run_llama's
/// networks (libtorch autocast; weights, gradients and optimizer state stay fp32). An op whose
/// list asks for what we do is applied by construction; see [`fleetx::MixPrecision::check_lists`].
pub const AMP_OPS: &[AmpOp] = &[
    AmpOp {
        name: "reduce_sum",
        low_precision: false,
        what: "every sum runs in fp32: the loss (its logits are cast to fp32 first), LayerNorm / RMSNorm statistics (on the fp32 residual stream, RMSNorm explicitly in fp32) and the gradient norm (fp32 gradients)",
    },
    AmpOp {
        name: "reduce_mean",
        low_precision: false,
        what: "every mean runs in fp32: the loss over the tokens and RMSNorm's mean square",
    },
    AmpOp {
        name: "elementwise_div",
        low_precision: false,
        what: "every division runs in fp32: the loss normalised by the token count, the LayerNorm / RMSNorm normalisation; attention scaling is a multiplication inside scaled_dot_product_attention",
    },
    AmpOp {
        name: "c_softmax_with_cross_entropy",
        low_precision: false,
        what: "the loss is computed in fp32 (the logits are cast to fp32 before the cross entropy)",
    },
    AmpOp {
        name: "softmax_with_cross_entropy",
        low_precision: false,
        what: "the loss is computed in fp32 (the logits are cast to fp32 before the cross entropy)",
    },
    AmpOp {
        name: "cross_entropy",
        low_precision: false,
        what: "the loss is computed in fp32 (the logits are cast to fp32 before the cross entropy)",
    },
    AmpOp {
        name: "cross_entropy2",
        low_precision: false,
        what: "the loss is computed in fp32 (the logits are cast to fp32 before the cross entropy)",
    },
    AmpOp {
        name: "layer_norm",
        low_precision: false,
        what: "LayerNorm / RMSNorm run in fp32 (on the fp32 residual stream; RMSNorm normalises in fp32 explicitly)",
    },
    AmpOp {
        name: "softmax",
        low_precision: true,
        what: "the attention softmax runs fused inside scaled_dot_product_attention on the AMP dtype's inputs (accumulating in fp32); it cannot be taken out to fp32",
    },
    AmpOp {
        name: "matmul",
        low_precision: true,
        what: "the linear layers, attention and output projection run in the AMP dtype (libtorch autocast's matmul list)",
    },
    AmpOp {
        name: "matmul_v2",
        low_precision: true,
        what: "the linear layers, attention and output projection run in the AMP dtype (libtorch autocast's matmul list)",
    },
    AmpOp {
        name: "mul",
        low_precision: true,
        what: "the linear layers run in the AMP dtype (libtorch autocast's matmul list)",
    },
    AmpOp {
        name: "fused_gemm_epilogue",
        low_precision: true,
        what: "the linear layers (one GEMM with its bias) run in the AMP dtype",
    },
    AmpOp {
        name: "lookup_table",
        low_precision: false,
        what: "the embedding lookup gathers the fp32 weight rows (libtorch autocast leaves embedding in the weight's dtype, Paddle's default too); the first matmul casts them to the AMP dtype",
    },
    AmpOp {
        name: "lookup_table_v2",
        low_precision: false,
        what: "the embedding lookup gathers the fp32 weight rows (libtorch autocast leaves embedding in the weight's dtype, Paddle's default too); the first matmul casts them to the AMP dtype",
    },
];

/// The architecture section (`Model`) of a decoder language model: what the shared config needs
/// of it. Everything else about a GPT or LLaMA config is common ([`LmConfig`]).
pub trait ModelSection: Default + Clone + PartialEq + Serialize + DeserializeOwned {
    /// The training program, for messages (`run_gpt`).
    const PROGRAM: &'static str;
    /// What a run without `-c` trains, for messages (`the built-in GPT-2 small (124M)`).
    const DEFAULTS: &'static str;
    /// A complete config to point users at (`modelzoo/gpt/configs/gpt_124m.yaml`).
    const EXAMPLE: &'static str;
    /// The architecture keys a training config must give (`Model.<key>`, not empty): a file
    /// without one would build the default shape for it without a word.
    const REQUIRED_KEYS: &'static [&'static str];
    /// The `Model.module` training builds (`GPTModule`).
    const TRAINING_MODULE: &'static str;
    /// Rejects shapes that cannot build and options the model does not implement.
    fn validate(&self) -> Result<(), Unsupported>;
    /// `Model.module` as written.
    fn module(&self) -> Option<&str>;
    /// The longest sequence the architecture takes (`Data.dataset.max_seq_len` is checked
    /// against it, and so is a generation's prompt plus `max_dec_len`).
    fn max_position_embeddings(&self) -> i64;
    /// Logits per position.
    fn vocab_size(&self) -> i64;
    /// Parameters (saturating, for sizing shapes too large to build).
    fn parameters(&self) -> u64;
    /// Values the KV cache keeps per position of one sequence: keys and values of every
    /// layer (saturating).
    fn kv_values_per_position(&self) -> u64;
    /// The least memory one training step with micro-batches of `micro` needs at `data`'s
    /// sequence length (see `runner::check_memory`), from exact sizes of what it must hold.
    fn memory_need(&self, data: &Data, micro: u64, amp: bool) -> MemoryNeed;
}

/// Sections a decoder language model's config may contain (FleetX names). `Inference`
/// (Paddle inference export) is refused with its own message.
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
];

/// Sections every training `-c` file must hold (after `_base_` merging): what the shipped
/// configs and FleetX's own pretraining layout (`pretrain_gpt_base.yaml`) all have. A file
/// without one is truncated or the wrong file, and would train defaults for it.
/// (`Generation` is only read by `--generate`; FleetX's pretraining configs have none.)
pub const REQUIRED_SECTIONS: &[&str] = &["Engine", "Data", "Model", "Optimizer"];

/// Every section of a decoder language model's config (`M` is its `Model`), typed and
/// validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LmConfig<M> {
    pub engine: EngineConfig,
    /// Resolved from either layout (`Global` batch sizes, `Data.Train`).
    pub data: Data,
    pub model: M,
    pub optimizer: Optimizer,
    pub generation: Generation,
    /// `Global`: its seed and device (its batch sizes are in `data`).
    #[serde(default)]
    pub global: Global,
    /// `Distributed`: only `dp_degree` can be more than 1, checked against the world.
    #[serde(default)]
    pub distributed: Distributed,
    /// `Engine.accumulate_steps` when the config gives it (the engine's own field cannot tell
    /// 1 from empty): it must equal local / micro batch, which is what accumulation is.
    #[serde(default)]
    pub accumulate_steps: Option<u64>,
    /// `Engine.save_load.save_epoch` when the config gives it (checked against the epochs).
    #[serde(default)]
    pub save_epoch: Option<u64>,
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
    /// A training `-c` file (with its bases) without a section every training config has,
    /// or whose `Model` lacks architecture keys: cut off, or the wrong file.
    #[error("{0}")]
    Incomplete(Box<Incomplete>),
}

/// What an incomplete training config lacks (see [`LmConfigError::Incomplete`]).
#[derive(Debug, thiserror::Error)]
#[error("{}: incomplete config: {}{}; {program} would train {defaults}'s values for what is missing: give a complete config (see {example}), or leave out -c to train those defaults on purpose", path.display(), incomplete(missing_sections, missing_keys, found), ending(end))]
pub struct Incomplete {
    pub path: PathBuf,
    /// Of [`REQUIRED_SECTIONS`].
    pub missing_sections: Vec<String>,
    /// Of [`ModelSection::REQUIRED_KEYS`] (when `Model` is there).
    pub missing_keys: Vec<&'static str>,
    /// The sections the file has.
    pub found: Vec<String>,
    pub end: Option<fleetx::FileEnd>,
    pub program: &'static str,
    pub defaults: &'static str,
    pub example: &'static str,
}

/// `no `Optimizer` section (found: Engine, Data, Model); `Model` has no hidden_size, ...`.
fn incomplete(sections: &[String], keys: &[&'static str], found: &[String]) -> String {
    let mut parts = Vec::new();
    if !sections.is_empty() {
        let names: Vec<String> = sections.iter().map(|m| format!("`{m}`")).collect();
        parts.push(format!(
            "no {} section (found: {}; a training config has {})",
            names.join(", "),
            found.join(", "),
            REQUIRED_SECTIONS.join(", ")
        ));
    }
    if !keys.is_empty() {
        parts.push(format!(
            "`Model` has no {} (or leaves it empty)",
            keys.join(", ")
        ));
    }
    parts.join("; ")
}

/// `; the file ends at line N inside `Model:` — truncated?` when the `-c` file ends inside a
/// section (the usual sign of a file cut off), else nothing.
fn ending(end: &Option<fleetx::FileEnd>) -> String {
    match end {
        Some(fleetx::FileEnd {
            path,
            line,
            section: Some(section),
        }) => format!(
            "; {} ends at line {line} inside `{section}:` — truncated?",
            path.display()
        ),
        _ => String::new(),
    }
}

impl<M: ModelSection> LmConfig<M> {
    /// [`LmConfig::load`] for training: a `-c` file must describe the whole run. An empty or
    /// truncated file parses (as nothing, without its last sections, or with a `Model` cut
    /// short) and would otherwise train the built-in defaults for what is missing — a
    /// different run from the one asked for, and one that may not fit in memory. So the file
    /// (with its `_base_` files) must hold every [`REQUIRED_SECTIONS`] section and every
    /// [`ModelSection::REQUIRED_KEYS`] key (an `-o` override may give a key), and name the
    /// training module. Without `-c` the defaults are what the user asked for.
    pub fn load_for_training(
        path: Option<&Path>,
        overrides: &[String],
    ) -> Result<LmConfig<M>, LmConfigError> {
        let mut tree = fleetx::load(path, &[])?;
        // Sections must come from the file: an override does not complete a cut-off file.
        let mut missing_sections = Vec::new();
        let found = tree.section_names();
        if let Some(path) = path {
            if found.is_empty() {
                return Err(LmConfigError::EmptyFile {
                    path: path.to_path_buf(),
                    defaults: M::DEFAULTS,
                    example: M::EXAMPLE,
                });
            }
            missing_sections = REQUIRED_SECTIONS
                .iter()
                .filter(|s| !tree.is_set(&[s]))
                .map(|s| s.to_string())
                .collect();
        }
        for text in overrides {
            tree.apply_override(text)?;
        }
        if let Some(path) = path {
            let missing_keys: Vec<&'static str> = if tree.is_set(&["Model"]) {
                M::REQUIRED_KEYS
                    .iter()
                    .copied()
                    .filter(|k| !tree.is_set(&["Model", k]))
                    .collect()
            } else {
                Vec::new()
            };
            if !missing_sections.is_empty() || !missing_keys.is_empty() {
                return Err(LmConfigError::Incomplete(Box::new(Incomplete {
                    path: path.to_path_buf(),
                    missing_sections,
                    missing_keys,
                    found,
                    end: tree.file_end(),
                    program: M::PROGRAM,
                    defaults: M::DEFAULTS,
                    example: M::EXAMPLE,
                })));
            }
        }
        let config: LmConfig<M> = LmConfig::from_tree(&tree)?;
        if let Some(module) = config.model.module().filter(|m| *m != M::TRAINING_MODULE) {
            return Err(unsupported(
                "Model.module",
                module,
                format!(
                    "{} trains `{}` (FleetX's other modules are for generation or evaluation)",
                    M::PROGRAM,
                    M::TRAINING_MODULE
                ),
            )
            .into());
        }
        Ok(config)
    }

    /// Reads `-c file` (optional) with `-o` overrides, then validates every section.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<LmConfig<M>, LmConfigError> {
        let tree = fleetx::load(path, overrides)?;
        LmConfig::from_tree(&tree)
    }

    /// Typed sections of an already merged tree, both layouts resolved; every section that
    /// only FleetX has (`Distributed`, `Profiler`, `Fused`, `Inference`) checked so a key we
    /// cannot honour is refused.
    pub fn from_tree(tree: &ConfigTree) -> Result<LmConfig<M>, LmConfigError> {
        if tree.get(&["Inference"]).is_some() {
            return Err(unsupported(
                "Inference",
                located(tree, &["Inference"], "section"),
                format!(
                    "Paddle inference export is not implemented; remove the section ({} --generate decodes from a training checkpoint)",
                    M::PROGRAM
                ),
            )
            .into());
        }
        tree.check_sections(SECTIONS)?;
        let global: Global = tree.section("Global")?.unwrap_or_default();
        let data: DataSection = tree.section("Data")?.unwrap_or_default();
        let distributed: Distributed = tree.section("Distributed")?.unwrap_or_default();
        let profiler: Profiler = tree.section("Profiler")?.unwrap_or_default();
        let fused: Fused = tree.section("Fused")?.unwrap_or_default();
        let engine: EngineConfig = tree.section("Engine")?.unwrap_or_default();
        let config = LmConfig {
            data: data.resolve(&global, tree)?,
            model: tree.section("Model")?.unwrap_or_default(),
            optimizer: tree.section("Optimizer")?.unwrap_or_default(),
            generation: tree.section("Generation")?.unwrap_or_default(),
            accumulate_steps: tree
                .is_set(&["Engine", "accumulate_steps"])
                .then_some(engine.accumulate_steps),
            save_epoch: tree
                .is_set(&["Engine", "save_load", "save_epoch"])
                .then_some(engine.save_load.save_epoch),
            engine,
            global,
            distributed,
        };
        global_checks(&config.global)?;
        config.distributed.validate()?;
        profiler.validate()?;
        if fused.tensor_fusion {
            return Err(unsupported(
                "Fused.tensor_fusion",
                true,
                "Paddle tensor fusion has no libtorch equivalent; set it to False",
            )
            .into());
        }
        config.validate()?;
        Ok(config)
    }

    /// Cross-section checks on top of each section's own.
    pub fn validate(&self) -> Result<(), Unsupported> {
        self.model.validate()?;
        self.optimizer.validate(M::PROGRAM)?;
        self.generation.validate()?;
        self.engine_checks()?;
        // The names in the precision lists must be known even with AMP off.
        self.check_amp_lists(false)?;
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

    /// `Engine.mix_precision.custom_black_list` / `custom_white_list` against what AMP does in
    /// the network ([`AMP_OPS`]); `amp`: whether this run trains under AMP.
    pub fn check_amp_lists(&self, amp: bool) -> Result<(), Unsupported> {
        self.engine
            .mix_precision
            .check_lists(amp, AMP_OPS)
            .map_err(|e| {
                let key = if e.list == "custom_black_list" {
                    "Engine.mix_precision.custom_black_list"
                } else {
                    "Engine.mix_precision.custom_white_list"
                };
                unsupported(key, e.name, e.reason)
            })
    }

    /// `Engine` keys the engine has no setting for: refused unless what we do anyway.
    fn engine_checks(&self) -> Result<(), Unsupported> {
        let e = &self.engine;
        if let Some(t) = e.test_iters {
            return Err(unsupported(
                "Engine.test_iters",
                t,
                format!(
                    "{} has no test pass (FleetX runs it from tools/eval.py; training evaluates the validation split every eval_freq steps); leave it empty",
                    M::PROGRAM
                ),
            ));
        }
        Ok(())
    }

    /// A given `Engine.save_load.save_epoch` for a run of `epochs` epochs (the flags
    /// applied): the engine saves every `save_steps` and at the end of the run, never at other
    /// epoch ends, so only a `save_epoch` reaching the last epoch is what we do.
    pub fn check_save_epoch(&self, epochs: u64) -> Result<(), Unsupported> {
        let epochs = epochs.max(1);
        let Some(save_epoch) = self.save_epoch else {
            return Ok(());
        };
        if save_epoch < epochs {
            return Err(unsupported(
                "Engine.save_load.save_epoch",
                save_epoch,
                format!(
                    "checkpoints are saved every save_steps steps and at the end of the run, not at epoch ends; for a run of {epochs} epoch(s) set save_epoch to {epochs} or more (the run's end is the last epoch's end) and use save_steps"
                ),
            ));
        }
        Ok(())
    }

    /// See [`ModelSection::memory_need`].
    pub fn memory_need(&self, micro: u64, amp: bool) -> MemoryNeed {
        self.model.memory_need(&self.data, micro, amp)
    }
}

/// `Global` keys checked without the command line (the device name; batch sizes are
/// resolved into `Data`).
fn global_checks(global: &Global) -> Result<(), Unsupported> {
    global.device_kind().map(drop)
}
