//! What every decoder-only language model's run shares, whatever its network: the token data a
//! FleetX `Data` section gives this process ([`TokenData`]), and the engine module around the
//! network ([`LmModule`]: next-token cross entropy, AdamW with FleetX's schedule, tokens/s,
//! `train.mfu`, `val.loss` / `val.ppl`). run_gpt and run_llama differ only in the network.

use std::fmt::Display;
use std::sync::Arc;

use modelzoo_engine::app::{Plan, RunContext, RunError};
use modelzoo_engine::{
    runner, Algorithm, BasicModule, BatchSource, EvalOutput, OptimizerConfig, StepInfo,
    TrainDevice, WorldInfo,
};
use run_scripts_template::StandardArgs;
use tch::nn::{self, VarStore};
use tch::{Device, Tensor};

use crate::config::{unsupported, Data, LmConfig, ModelSection, Optimizer};
use crate::{Corpus, GptDataset, Split, TokenBatch, TokenBatches, Tokenizer};

/// A network [`LmModule`] trains: logits for token windows.
pub trait TokenModel {
    /// Why a forward pass refused its input.
    type Error: Display;
    /// The network's name in messages ("GPT").
    const NAME: &'static str;
    /// Logits `[batch, seq, vocab]` of `ids` `[batch, seq]`; `train` turns dropout on.
    fn logits(&self, ids: &Tensor, train: bool) -> Result<Tensor, Self::Error>;
    /// Training FLOPs per token at `seq_len` (6·N + attention), for `train.mfu`.
    fn train_flops_per_token(&self, seq_len: i64) -> f64;
}

/// Mean next-token cross entropy of `logits` `[batch, seq, vocab]` against `labels`
/// `[batch, seq]`, computed in at least fp32 (under autocast the logits may be bf16 / fp16).
pub fn next_token_loss(logits: &Tensor, labels: &Tensor) -> Tensor {
    let v = logits.size()[2];
    modelzoo_engine::at_least_f32(&logits.reshape([-1, v]))
        .cross_entropy_for_logits(&labels.reshape([-1]))
}

/// A language model and its training recipe, as an engine [`BasicModule`].
pub struct LmModule<N> {
    vs: VarStore,
    net: N,
    optimizer: Optimizer,
    flops_per_token: f64,
    /// FLOP/s the MFU is measured against (see [`crate::mfu::peak_flops`]).
    peak_flops: f64,
}

impl<N: TokenModel> LmModule<N> {
    /// Builds the network on the CPU with `seed`-determined initial weights. `seq_len` is the
    /// training sequence length (for the FLOPs per token); `peak_flops` the device's peak.
    pub fn new(
        build: impl FnOnce(&nn::Path) -> N,
        optimizer: Optimizer,
        seq_len: i64,
        peak_flops: f64,
        seed: u64,
    ) -> LmModule<N> {
        tch::manual_seed(seed as i64);
        let vs = VarStore::new(Device::Cpu);
        let net = build(&vs.root());
        let flops_per_token = net.train_flops_per_token(seq_len);
        LmModule {
            vs,
            net,
            optimizer,
            flops_per_token,
            peak_flops,
        }
    }

    /// The network (tests compare it with references).
    pub fn model(&self) -> &N {
        &self.net
    }

    /// Training FLOPs per token (6·N + attention), as used for `train.mfu`.
    pub fn flops_per_token(&self) -> f64 {
        self.flops_per_token
    }

    fn logits(&self, input: &Tensor, train: bool) -> Tensor {
        // Shapes and ids are checked when batches are built and the config is validated
        // (seq_len <= max_position_embeddings), so forward cannot reject its input here; a
        // failure (a bug, or a libtorch error inside a recomputed layer) is reported by the
        // caller's libtorch-panic handler.
        match self.net.logits(input, train) {
            Ok(l) => l,
            Err(e) => panic!("{} forward failed on a training batch: {e}", N::NAME),
        }
    }
}

impl<N: TokenModel> BasicModule for LmModule<N> {
    type Batch = TokenBatch;
    fn var_store(&self) -> &VarStore {
        &self.vs
    }
    fn var_store_mut(&mut self) -> &mut VarStore {
        &mut self.vs
    }
    fn pretreating_batch(&mut self, batch: TokenBatch, device: &dyn TrainDevice) -> TokenBatch {
        TokenBatch {
            input: device.to_device(&batch.input),
            labels: device.to_device(&batch.labels),
        }
    }
    fn items_in(&self, batch: &TokenBatch) -> usize {
        batch.input.numel()
    }
    fn ips_unit(&self) -> &'static str {
        "tokens/s"
    }
    fn train_metric_meta(&self) -> Vec<(&'static str, &'static str, &'static str)> {
        vec![("train.mfu", "%", "MAXIMIZE")]
    }
    fn train_metrics(&mut self, info: &StepInfo) -> Vec<(String, f64)> {
        let mfu = info.ips * self.flops_per_token / self.peak_flops.max(1.0) * 100.0;
        vec![("train.mfu".to_string(), mfu)]
    }
    /// For `modelzoo bench`'s MFU: the training FLOPs per token and the peak `train.mfu` uses.
    fn driver_facts(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("flops_per_item", self.flops_per_token),
            ("peak_flops", self.peak_flops),
        ]
    }
    fn val_metric_meta(&self) -> Vec<(&'static str, &'static str, &'static str)> {
        vec![("val.ppl", "", "MINIMIZE")]
    }
    fn training_step(&mut self, batch: &TokenBatch) -> Tensor {
        next_token_loss(&self.logits(&batch.input, true), &batch.labels)
    }
    fn validation_step(&mut self, batch: &TokenBatch) -> EvalOutput {
        let tokens = batch.labels.numel();
        let loss = next_token_loss(&self.logits(&batch.input, false), &batch.labels);
        EvalOutput {
            loss_sum: loss * tokens as f64,
            counts: Vec::new(),
            samples: tokens,
        }
    }
    /// `val.loss` = mean next-token cross entropy over the evaluated tokens, `val.ppl` =
    /// exp(`val.loss`).
    fn validation_epoch_end(
        &mut self,
        loss_sum: f64,
        _counts: &[(&'static str, f64)],
        samples: usize,
    ) -> Vec<(String, f64)> {
        let loss = loss_sum / samples.max(1) as f64;
        vec![
            ("val.loss".to_string(), loss),
            ("val.ppl".to_string(), loss.exp()),
        ]
    }
    fn test_step(&mut self, batch: &TokenBatch) -> Tensor {
        self.logits(&batch.input, false).argmax(-1, false)
    }
    fn configure_optimizers(&self, _steps_per_epoch: u64, _total_steps: u64) -> OptimizerConfig {
        let o = &self.optimizer;
        OptimizerConfig {
            lr: o.lr.max_lr,
            algorithm: Algorithm::AdamW {
                beta1: o.adam_beta1,
                beta2: o.adam_beta2,
                epsilon: o.adam_epsilon,
            },
            weight_decay: o.weight_decay,
            schedule: o.lr.to_schedule(),
            clip_grad_norm: o.grad_clip.max_norm(),
        }
    }
}

/// The token batches this process trains and validates on.
pub struct TokenData {
    pub train: TokenBatches,
    /// `None` when the validation split holds less than one micro-batch.
    pub val: Option<Box<dyn BatchSource<TokenBatch>>>,
    /// The corpus as messages name it.
    pub corpus: String,
    /// Tokens per sample (`Data.dataset.max_seq_len`).
    pub seq: usize,
    /// Samples per micro-batch, and micro-batches per optimizer step.
    pub micro: usize,
    pub accumulate: usize,
}

impl TokenData {
    /// Opens the tokenizer and corpus of `data` (its vocabulary must fit the model's `vocab`),
    /// splits it as FleetX does and batches it for this process of the run's data-parallel
    /// group. A train split with less than one optimizer step per rank is refused.
    pub fn load(data: &Data, vocab: i64, run: &RunContext) -> Result<TokenData, RunError> {
        let (_, world) = run.rank_and_world();
        let batch = data
            .batch_size
            .resolve(world as u64)
            .map_err(RunError::input)?;
        let ds = &data.dataset;
        let tokenizer = Tokenizer::load(ds.tokenizer.as_deref()).map_err(RunError::input)?;
        if tokenizer.vocab_size() as i64 > vocab {
            return Err(RunError::input(format!(
                "the tokenizer has {} ids but Model.vocab_size is {vocab}: raise Model.vocab_size",
                tokenizer.vocab_size()
            )));
        }
        let corpus =
            Arc::new(Corpus::open(ds.input_dir.as_deref(), &tokenizer).map_err(RunError::input)?);
        // Before training, not when the batch holding it is drawn.
        corpus.check_vocab(vocab).map_err(RunError::input)?;
        let seq = ds.max_seq_len as usize;
        let train_set = GptDataset::new(
            Arc::clone(&corpus),
            &ds.split,
            Split::Train,
            seq,
            Some(ds.seed),
        )
        .map_err(RunError::input)?;
        let val_set = GptDataset::new(Arc::clone(&corpus), &ds.split, Split::Valid, seq, None)
            .map_err(RunError::input)?;
        let micro = batch.micro as usize;
        let accumulate = batch.accumulate_steps as usize;
        let full_pass = train_set.len() / (micro * world);
        if full_pass < accumulate {
            return Err(RunError::input(format!(
                "{}: the train split holds {} samples of {} tokens, fewer than one step of {} (local batch); use more data or a smaller batch / max_seq_len",
                corpus.name(),
                train_set.len(),
                seq + 1,
                batch.local
            )));
        }
        // FleetX sizes a run by max_steps and lets the sample index wrap around the split.
        let per_epoch = match run.settings.max_steps {
            Some(m) => full_pass.max(m as usize * accumulate),
            None => full_pass,
        };
        let train = match run.ddp {
            Some(d) => TokenBatches::new(train_set, micro, vocab, per_epoch)
                .sharded(d.world.rank, d.world.world_size),
            None => TokenBatches::new(train_set, micro, vocab, per_epoch),
        };
        let val_batches = val_set.len() / micro;
        let val = (val_batches > 0).then(|| {
            Box::new(TokenBatches::new(val_set, micro, vocab, val_batches))
                as Box<dyn BatchSource<TokenBatch>>
        });
        if val.is_none() {
            tracing::warn!(
                "the validation split has fewer than {micro} samples: no val.loss / val.ppl"
            );
        }
        Ok(TokenData {
            train,
            val,
            corpus: corpus.name().to_string(),
            seq,
            micro,
            accumulate,
        })
    }
}

/// The training config from `-c` / `-o` with the standard flags the user typed on top
/// (`--batch_size`, `--lr`, `--dataset_path`).
pub fn training_config<M: ModelSection>(std: &StandardArgs) -> Result<LmConfig<M>, RunError> {
    let mut config = LmConfig::<M>::load_for_training(std.config.as_deref(), &std.r#override)
        .map_err(RunError::input)?;
    if std.explicit.batch_size {
        let bs = std.batch_size as u64;
        let b = &mut config.data.batch_size;
        b.local_batch_size = Some(bs);
        b.global_batch_size = None;
        b.micro_batch_size = b.micro_batch_size.min(bs);
    }
    if std.explicit.lr {
        config.optimizer.lr.max_lr = std.lr;
    }
    if let Some(dir) = &std.dataset_path {
        config.data.dataset.input_dir = Some(dir.clone());
    }
    config.validate().map_err(RunError::input)?;
    Ok(config)
}

/// The seed of a run: `--seed` when typed, else the config's `Global.seed`, else `--seed`'s
/// default.
pub fn run_seed<M>(std: &StandardArgs, config: &LmConfig<M>) -> u64 {
    match config.global.seed {
        Some(seed) if !std.explicit.seed => seed,
        _ => std.seed as u64,
    }
}

/// The config's `Global.device` against `--device` (see `Global::check_device`).
pub fn check_device<M>(std: &StandardArgs, config: &LmConfig<M>) -> Result<(), RunError> {
    config
        .global
        .check_device(&std.device, std.explicit.device)
        .map_err(RunError::input)
}

/// A language model's training plan, the same for every decoder: the config
/// ([`training_config`]), FleetX's batch sizes resolved against the data-parallel world (global
/// batch = local batch × processes), the engine settings with the config's `Engine` section
/// under the flags, and the memory one step needs. The FleetX keys that need the command line
/// or the world are applied or refused here: `Global.seed` / `Global.device` (flags win),
/// `Distributed.dp_degree`, `Engine.accumulate_steps`, `Engine.save_load.save_epoch` and the
/// mixed-precision op lists (against whether this run uses AMP).
pub fn plan<M: ModelSection>(std: &StandardArgs) -> Result<Plan<LmConfig<M>>, RunError> {
    let config = training_config::<M>(std)?;
    check_device(std, &config)?;
    let world = WorldInfo::from_env()
        .map_err(RunError::input)?
        .map_or(1, |w| w.world_size);
    config
        .distributed
        .check_world(world)
        .map_err(RunError::input)?;
    let batch = config
        .data
        .batch_size
        .resolve(world as u64)
        .map_err(RunError::input)?;
    if let Some(given) = config
        .accumulate_steps
        .filter(|&a| a != batch.accumulate_steps)
    {
        return Err(RunError::input(unsupported(
            "Engine.accumulate_steps",
            given,
            format!(
                "accumulation is local_batch_size / micro_batch_size = {} / {} = {} (FleetX derives it the same way); set it to {} or leave it empty",
                batch.local, batch.micro, batch.accumulate_steps, batch.accumulate_steps
            ),
        )));
    }
    let section = std.config.is_some().then_some(&config.engine);
    let mut settings = runner::settings_from_args(std, section).map_err(RunError::input)?;
    settings.accumulate_steps = batch.accumulate_steps;
    settings.seed = run_seed(std, &config);
    config
        .check_save_epoch(settings.num_train_epochs)
        .map_err(RunError::input)?;
    let amp = std.autocast || section.is_some_and(|e| e.mix_precision.use_pure_fp16);
    config.check_amp_lists(amp).map_err(RunError::input)?;
    Ok(Plan {
        settings,
        batch_size: batch.local as usize,
        memory: Some(config.memory_need(batch.micro, amp)),
        prepared: config,
    })
}

/// What a decoder recipe's `build` is, for any network: this process's token data, the
/// [`LmModule`] around the network `build` makes (MFU against the device's peak, FLOP/s
/// [`crate::mfu::peak_flops`]), and the writer of `meta_file` beside the checkpoints (the
/// `Model` section and the tokenizer: what `--generate --ckpt` rebuilds the network from).
/// `then` runs on the built module before training (run_llama loads `--pretrained` weights
/// there); `note` is added to the summary after the sequence length.
pub fn build<M, N>(
    config: LmConfig<M>,
    run: &RunContext,
    meta_file: &'static str,
    build: impl FnOnce(&nn::Path, &M) -> N,
    then: impl FnOnce(&LmModule<N>) -> Result<(), RunError>,
    note: &str,
) -> Result<modelzoo_engine::app::Built<LmModule<N>>, RunError>
where
    M: ModelSection + Clone + serde::Serialize + Send + 'static,
    N: TokenModel,
{
    let data = TokenData::load(&config.data, config.model.vocab_size(), run)?;
    let (seq, micro, accum) = (data.seq, data.micro, data.accumulate);
    // The checkpoints carry what `--generate` needs to rebuild the model and tokenizer.
    let ckpt_dir = run.settings.ckpt_dir.clone();
    let meta = crate::checkpoint::Meta {
        model: config.model.clone(),
        tokenizer: config.data.dataset.tokenizer.clone(),
    };
    let write_meta: modelzoo_engine::app::OutputWriter = Box::new(move || {
        crate::checkpoint::write_meta(&ckpt_dir, meta_file, &meta).map_err(RunError::input)
    });
    let amp = matches!(
        run.settings.precision,
        modelzoo_engine::Precision::Amp { .. }
    );
    let (peak, peak_source) = crate::mfu::peak_flops(run.train_device, &run.device.name(), amp);
    let module = LmModule::new(
        |vs| build(vs, &config.model),
        config.optimizer.clone(),
        seq as i64,
        peak,
        run.settings.seed,
    );
    then(&module)?;
    Ok(modelzoo_engine::app::Built {
        module,
        train: Box::new(data.train),
        val: data.val,
        data: format!("the training data of {}", data.corpus),
        summary: format!(
            "micro batch {micro} x {accum} accumulation, seq {seq}{note}; MFU against {peak:.3e} FLOP/s ({peak_source})"
        ),
        on_output_claimed: Some(write_meta),
    })
}
