//! The `Data` section in both layouts (the seeds' `Data.batch_size` / `Data.dataset`, FleetX's
//! `Global.*_batch_size` with `Data.Train` / `Data.Eval`), resolved to one [`Data`].

use std::path::PathBuf;

use model_config::fleetx::ConfigTree;
use serde::{Deserialize, Serialize};

use super::{located, unsupported, Global, Unsupported};

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
