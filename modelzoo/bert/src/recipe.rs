//! How `run_bert` runs: its [`Recipe`] for the engine's entry point — the variant, task and
//! tokenizer from the flags, the engine settings from the `Engine` section and the flags, then
//! the task's data for this rank and the module, optionally started from `--pretrained`
//! weights (Hugging Face's or a run_bert checkpoint).

use std::path::Path;
use std::sync::Arc;

use modelzoo_engine::app::{Built, OutputWriter, Plan, Recipe, RunContext, RunError};
use modelzoo_engine::runner::{self, MemoryNeed};
use modelzoo_engine::{BasicModule as _, BatchSource, LogValue};
use run_scripts_template::StandardArgs;

use crate::args::ModelArgs;
use crate::checkpoint::{self, Description, Meta};
use crate::config::{BertConfig, Task, Variant};
use crate::data::classify::ClassifyData;
use crate::data::pretrain::{Masking, PretrainData};
use crate::data::squad::{SquadData, Windows};
use crate::data::{Batches, BertBatch, Samples};
use crate::module::{peak_flops, BertModule, Hyper, OptimizerKind};
use crate::pretrained::Weights;
use crate::tokenizer::WordPiece;

/// The merged argument spec built by build.rs (standard.yaml + spec.yaml).
pub const SPEC_YAML: &str = include_str!(concat!(env!("OUT_DIR"), "/run_args.yaml"));

/// The FleetX config sections run_bert reads (`-c` / `-o`); any other is an error.
pub const SECTIONS: &[&str] = &["Engine"];

/// The parsed, checked argument spec of `run_bert`.
pub fn spec() -> Result<run_scripts_template::ArgSpec, run_scripts_template::SpecError> {
    run_scripts_template::ArgSpec::from_yaml(SPEC_YAML, "run_bert merged spec")
}

/// `run_bert`: BERT pretraining and fine-tuning.
pub struct BertRecipe;

/// Everything [`Recipe::plan`] settles for [`Recipe::build`].
pub struct Prepared {
    pub variant: Variant,
    pub task: Task,
    pub config: BertConfig,
    pub tokenizer: WordPiece,
    pub weights: Option<Weights>,
    /// Tokens per sequence.
    pub seq: usize,
    pub max_predictions: usize,
    pub hyper: Hyper,
}

/// The learning rate when `--lr` is not typed: NVIDIA-style LAMB pretraining at small batch,
/// the BERT paper's fine-tuning rates (GLUE 2e-5..5e-5, SQuAD 3e-5).
pub fn default_lr(task: Task) -> f64 {
    match task {
        Task::Pretrain => 1e-3,
        Task::Classification { .. } => 5e-5,
        Task::Squad => 3e-5,
    }
}

/// Plans a run from the flags (see [`Recipe::plan`]); public for tests.
pub fn prepare(std: &StandardArgs, args: &ModelArgs) -> Result<Prepared, RunError> {
    let variant: Variant = std
        .model_name
        .as_deref()
        .unwrap_or("bert_base")
        .parse()
        .map_err(RunError::input)?;
    let task = Task::parse(&args.task, args.num_labels).map_err(RunError::input)?;
    let seq = args
        .max_seq_length
        .unwrap_or(if task == Task::Squad { 384 } else { 128 }) as usize;
    let tokenizer = WordPiece::load(args.tokenizer.as_deref()).map_err(RunError::input)?;
    let weights = match &args.pretrained {
        Some(p) if !p.exists() => {
            return Err(RunError::input(format!(
                "--pretrained {}: no such file or directory; give a Hugging Face BERT model.safetensors or a run_bert output directory / checkpoint",
                p.display()
            )))
        }
        Some(p) => Some(Weights::read(p).map_err(RunError::input)?),
        None => None,
    };
    let vocab = match (args.vocab_size, &weights) {
        (Some(v), _) => v,
        (None, Some(w)) => w.vocab_size(),
        (None, None) => tokenizer.vocab_size() as i64,
    };
    if (tokenizer.vocab_size() as i64) > vocab {
        return Err(RunError::input(format!(
            "the tokenizer {} has {} ids but the model's vocabulary is {vocab}{}: use the tokenizer the weights were trained with, or raise --vocab_size",
            tokenizer.name(),
            tokenizer.vocab_size(),
            if weights.is_some() && args.vocab_size.is_none() {
                " (the --pretrained weights')"
            } else {
                ""
            }
        )));
    }
    let mut config = variant.config(vocab);
    config.hidden_dropout_prob = args.dropout;
    config.attention_probs_dropout_prob = args.dropout;
    config.pad_token_id = i64::from(tokenizer.pad);
    config.validate().map_err(RunError::input)?;
    if seq as i64 > config.max_position_embeddings {
        return Err(RunError::input(format!(
            "--max_seq_length {seq} exceeds the model's {} positions",
            config.max_position_embeddings
        )));
    }
    let max_predictions = args
        .max_predictions_per_seq
        .map_or((args.masked_lm_prob * seq as f64).ceil() as usize, |m| {
            m as usize
        })
        .max(1);
    let optimizer =
        OptimizerKind::parse(args.optimizer.as_deref(), task).map_err(RunError::input)?;
    let hyper = Hyper {
        lr: if std.explicit.lr {
            std.lr
        } else {
            default_lr(task)
        },
        optimizer,
        weight_decay: args.weight_decay,
        warmup_proportion: args.warmup_proportion.unwrap_or(if task == Task::Pretrain {
            0.01
        } else {
            0.1
        }),
        poly_power: args.poly_power,
        clip_grad_norm: Some(args.clip_grad_norm).filter(|c| *c > 0.0),
    };
    Ok(Prepared {
        variant,
        task,
        config,
        tokenizer,
        weights,
        seq,
        max_predictions,
        hyper,
    })
}

impl Recipe for BertRecipe {
    type Args = ModelArgs;
    type Module = BertModule;
    type Prepared = Prepared;
    const PROGRAM: &'static str = "run_bert";
    const ABOUT: &'static str = "BERT (masked-LM + next-sentence pretraining with LAMB; sequence classification and SQuAD fine-tuning; Hugging Face weights) standard case of the ModelZoo";
    const SPEC_YAML: &'static str = SPEC_YAML;

    fn plan(&self, std: &StandardArgs, args: &ModelArgs) -> Result<Plan<Prepared>, RunError> {
        let p = prepare(std, args)?;
        let settings = runner::settings_from_config(std, SECTIONS)?;
        let amp =
            std.autocast || matches!(settings.precision, modelzoo_engine::Precision::Amp { .. });
        let memory = memory_need(&p, std.batch_size as u64, amp);
        Ok(Plan {
            settings,
            batch_size: std.batch_size as usize,
            memory: Some(memory),
            prepared: p,
        })
    }

    /// The learning rate the run uses (`--lr`, or the task's default), the task, the
    /// optimizer and the sequence length.
    fn facts(
        &self,
        _std: &StandardArgs,
        _args: &ModelArgs,
        p: &Prepared,
        _device: device_sdaa::DeviceKind,
    ) -> Vec<(&'static str, LogValue)> {
        vec![
            ("lr", LogValue::Float(p.hyper.lr)),
            ("task", LogValue::Str(p.task.name().to_string())),
            (
                "optimizer",
                LogValue::Str(p.hyper.optimizer.name().to_string()),
            ),
            ("max_seq_length", LogValue::Int(p.seq as i64)),
        ]
    }

    fn build(
        &self,
        std: &StandardArgs,
        args: &ModelArgs,
        p: Prepared,
        run: &RunContext,
    ) -> Result<Built<BertModule>, RunError> {
        let (rank, world) = run.rank_and_world();
        let micro = std.batch_size as usize;
        let accumulate = run.settings.accumulate_steps.max(1) as usize;
        let seed = run.settings.seed;
        let data_path = std.dataset_path.as_deref();
        let amp = matches!(
            run.settings.precision,
            modelzoo_engine::Precision::Amp { .. }
        );
        let (peak, peak_source) = peak_flops(run.train_device, &run.device.name(), amp);
        let need_data = |what: &str| {
            RunError::input(format!(
                "--task {} needs --dataset_path: {what}",
                p.task.name()
            ))
        };
        let tok = &p.tokenizer;
        let mut label_names = Vec::new();
        let mlm_fraction = p.max_predictions as f64 / p.seq as f64;
        let module = || {
            BertModule::new(
                &p.config,
                p.task,
                p.hyper.clone(),
                p.seq as i64,
                mlm_fraction.min(args.masked_lm_prob),
                peak,
                seed,
            )
        };
        let (module, (train, val), source, detail): (BertModule, Sources, String, String) = match p
            .task
        {
            Task::Pretrain => {
                let masking = Masking {
                    seq: p.seq,
                    max_predictions: p.max_predictions,
                    prob: args.masked_lm_prob,
                    vocab: tok.vocab_size(),
                    seed,
                };
                let d = PretrainData::load(data_path, tok, masking).map_err(RunError::input)?;
                let detail = format!(
                    "{} train / {} validation sentence pairs, {:.0}% masked (at most {} per sequence)",
                    d.train.len(),
                    d.val.len(),
                    args.masked_lm_prob * 100.0,
                    p.max_predictions
                );
                let (train, val) = batches(
                    Arc::new(d.train),
                    Arc::new(d.val),
                    micro,
                    accumulate,
                    rank,
                    world,
                    seed,
                    run,
                    p.config.vocab_size,
                    &d.corpus,
                )?;
                (module(), (train, val), d.corpus, detail)
            }
            Task::Classification { num_labels } => {
                let dir = data_path.ok_or_else(|| {
                    need_data("a directory with train.tsv|jsonl and dev.tsv|jsonl")
                })?;
                let d = ClassifyData::load(dir, tok, p.seq, num_labels).map_err(RunError::input)?;
                label_names = d.label_names.clone();
                let detail = format!(
                    "{} train / {} dev examples, {num_labels} classes{}",
                    d.train.len(),
                    d.val.len(),
                    if label_names.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", label_names.join(", "))
                    }
                );
                let (train, val) = batches(
                    Arc::new(d.train),
                    Arc::new(d.val),
                    micro,
                    accumulate,
                    rank,
                    world,
                    seed,
                    run,
                    p.config.vocab_size,
                    &d.source,
                )?;
                (module(), (train, val), d.source, detail)
            }
            Task::Squad => {
                let dir = data_path.ok_or_else(|| {
                    need_data("a directory with train-v1.1.json and dev-v1.1.json")
                })?;
                let w = Windows {
                    seq: p.seq,
                    max_query: args.max_query_length as usize,
                    stride: args.doc_stride as usize,
                };
                let d = SquadData::load(dir, tok, w).map_err(RunError::input)?;
                let detail = format!(
                    "{} train questions ({} windows) / {} dev questions ({} windows)",
                    d.train.examples.len(),
                    d.train.features(),
                    d.val.examples.len(),
                    d.val.features()
                );
                let val = Arc::new(d.val);
                let (train, val_batches) = batches(
                    Arc::new(d.train),
                    Arc::clone(&val),
                    micro,
                    accumulate,
                    rank,
                    world,
                    seed,
                    run,
                    p.config.vocab_size,
                    &d.source,
                )?;
                let m = module().with_squad_eval(val, args.max_answer_length as usize);
                (m, (train, val_batches), d.source, detail)
            }
        };
        if let Some(w) = &p.weights {
            let report = w
                .load_into(module.var_store(), p.variant.name())
                .map_err(RunError::input)?;
            tracing::info!(
                weights = %w.path.display(),
                "--pretrained ({}): {} tensors loaded{}{}",
                w.kind,
                report.loaded,
                if report.fresh.is_empty() {
                    String::new()
                } else {
                    format!("; starting fresh: {}", report.fresh.join(", "))
                },
                if report.ignored.is_empty() {
                    String::new()
                } else {
                    format!("; left out (other heads): {}", report.ignored.join(", "))
                }
            );
        }
        let ckpt_dir = run.settings.ckpt_dir.clone();
        let meta = Meta {
            model: Description {
                model_name: p.variant,
                task: p.task,
                config: p.config.clone(),
                label_names,
            },
            tokenizer: p.tokenizer.path().map(Path::to_path_buf),
        };
        let write_meta: OutputWriter =
            Box::new(move || checkpoint::write_meta(&ckpt_dir, &meta).map_err(RunError::input));
        Ok(Built {
            module,
            train,
            val,
            data: format!("the training data of {source}"),
            summary: format!(
                "{} {} on {source}: {detail}; batch {micro} x seq {}, {} from lr {}; MFU against {peak:.3e} FLOP/s ({peak_source})",
                p.variant,
                p.task.name(),
                p.seq,
                p.hyper.optimizer.name(),
                p.hyper.lr
            ),
            on_output_claimed: Some(write_meta),
        })
    }
}

/// The training batches and the validation batches (if any).
type Sources = (
    Box<dyn BatchSource<BertBatch>>,
    Option<Box<dyn BatchSource<BertBatch>>>,
);

/// This rank's training batches and the validation batches (`None` when the validation split
/// is empty). A run sized by `--step` wraps around the data; a train split with less than one
/// optimizer step for every rank, or a token id outside the model's `vocab`, is refused.
#[allow(clippy::too_many_arguments)]
fn batches<S: Samples + 'static, V: Samples + 'static>(
    train: Arc<S>,
    val: Arc<V>,
    micro: usize,
    accumulate: usize,
    rank: usize,
    world: usize,
    seed: u64,
    run: &RunContext,
    vocab: i64,
    source: &str,
) -> Result<Sources, RunError> {
    // Every id a batch can hold, before training (an embedding lookup past the vocabulary
    // is libtorch's index error mid-run).
    let max = train.max_token_id().max(val.max_token_id());
    if i64::from(max) >= vocab {
        return Err(RunError::input(format!(
            "{source}: token id {max} is outside the model's vocabulary ({vocab} ids): the data or the tokenizer's ids do not fit the model; use the tokenizer the weights were trained with, or raise --vocab_size"
        )));
    }
    let full_pass = train.len() / (micro * world);
    if full_pass < accumulate {
        return Err(RunError::input(format!(
            "{source}: the training split holds {} examples, fewer than one optimizer step ({micro} x {accumulate} accumulation x {world} processes); use more data or a smaller --batch_size",
            train.len()
        )));
    }
    let per_epoch = match run.settings.max_steps {
        Some(m) => full_pass.max(m as usize * accumulate),
        None => full_pass,
    };
    let val = if val.is_empty() {
        tracing::warn!("{source}: the validation split is empty: no validation metrics");
        None
    } else {
        Some(Box::new(Batches::eval(val, micro)) as Box<dyn BatchSource<BertBatch>>)
    };
    Ok((
        Box::new(Batches::train(train, micro, per_epoch, seed, rank, world)),
        val,
    ))
}

/// The least memory one training step needs (see `runner::check_memory`): fp32 weights,
/// gradients and the optimizer's two moments (16 bytes per parameter), and what backward keeps
/// per layer — the attention probabilities (batch × heads × seq²) and the layer's input
/// (batch × seq × hidden), 2 bytes per value under autocast. Products saturate.
pub fn memory_need(p: &Prepared, micro: u64, amp: bool) -> MemoryNeed {
    use runner::{bytes, bytes_sum};
    let c = &p.config;
    let u = |v: i64| v.max(0) as u64;
    let seq = p.seq as u64;
    let act = if amp { 2 } else { 4 };
    let params = c.num_params(p.task);
    let per_layer = bytes_sum(&[
        bytes(&[micro, u(c.num_attention_heads), seq, seq, act]),
        bytes(&[micro, seq, u(c.hidden_size), act]),
    ]);
    MemoryNeed {
        host: bytes(&[4, micro, seq, 8]),
        device: bytes_sum(&[
            bytes(&[params, 16]),
            bytes(&[u(c.num_hidden_layers), per_layer]),
        ]),
        args: format!(
            "--model_name {} --batch_size {micro} --max_seq_length {seq} ({params} parameters)",
            p.variant
        ),
        counted: "fp32 weights, gradients and optimizer moments, and the attention probabilities and layer inputs backward keeps".into(),
    }
}
