//! What `run_gpt` does with its parsed arguments: `--generate` (load a checkpoint, decode a
//! prompt) or training through `modelzoo_engine` ([`crate::module::GptModule`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use device_sdaa::{Device as RunDevice, DeviceSpec};
use modelzoo_engine::{
    install_signal_handlers, runner, BatchSource, Engine, FitSummary, Precision,
};
use modelzoo_text::{Corpus, GptDataset, Split, TokenBatch, TokenBatches, Tokenizer};
use run_scripts_template::{spec::ArgSpec, ResolvedArgs};
use tch::nn::VarStore;
use tch::Device;

use crate::checkpoint::{self, Meta};
use crate::config::GptConfig;
use crate::generate::generate;
use crate::model::Gpt;
use crate::module::{peak_flops, GptModule};

/// Training or generation itself failed (non-finite loss, libtorch error, I/O during the
/// run): exit 1, where bad input exits 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TrainingFailed(pub String);

/// `--help` text.
pub const ABOUT: &str =
    "GPT (FleetX single-card pretraining and zero-shot generation) standard case of the ModelZoo";

/// The merged argument spec built by build.rs (standard.yaml + spec.yaml).
pub const SPEC_YAML: &str = include_str!(concat!(env!("OUT_DIR"), "/run_args.yaml"));

/// The embedded spec, parsed.
pub fn spec() -> anyhow::Result<ArgSpec> {
    Ok(ArgSpec::from_yaml(SPEC_YAML, "run_gpt merged spec")?)
}

/// The FleetX config from `-c` / `-o`.
pub fn load_config(args: &ResolvedArgs) -> anyhow::Result<GptConfig> {
    let overrides: Vec<String> = args.list("override").to_vec();
    Ok(GptConfig::load(args.path("config"), &overrides)?)
}

/// Runs the command; `Ok(())` = exit 0.
pub fn run(args: &ResolvedArgs) -> anyhow::Result<()> {
    if args.flag("generate") {
        return run_generate(args);
    }
    run_train(args).map(|_| ())
}

/// Train per the config and flags: `train.loss` / `train.ips` (tokens/s) / `train.lr` /
/// `train.mfu` and `val.loss` / `val.ppl` to stdout and `<output_dir>/<model_name>_log.json`,
/// checkpoints to `<output_dir>/checkpoints/`.
pub fn run_train(args: &ResolvedArgs) -> anyhow::Result<FitSummary> {
    let overrides: Vec<String> = args.list("override").to_vec();
    let mut config = GptConfig::load_for_training(args.path("config"), &overrides)?;
    if args.is_explicit("batch_size") {
        let bs = runner::positive(args, "batch_size")? as u64;
        let b = &mut config.data.batch_size;
        b.local_batch_size = Some(bs);
        b.global_batch_size = None;
        b.micro_batch_size = b.micro_batch_size.min(bs);
    }
    if args.is_explicit("lr") {
        config.optimizer.lr.max_lr = args.float("lr").unwrap_or(config.optimizer.lr.max_lr);
    }
    if let Some(dir) = args.path("dataset_path") {
        config.data.dataset.input_dir = Some(dir.to_path_buf());
    }
    config.validate()?;
    // FleetX: global batch = local batch × data-parallel processes.
    let world = modelzoo_engine::WorldInfo::from_env()?.map_or(1, |w| w.world_size);
    let batch = config.data.batch_size.resolve(world as u64)?;
    let from_config = args.path("config").is_some();
    let mut settings = runner::settings_from_args(args, from_config.then_some(&config.engine))?;
    settings.accumulate_steps = batch.accumulate_steps;
    if let Some(r) = &settings.resume {
        modelzoo_engine::checkpoint::resolve(r).map_err(|e| anyhow::anyhow!("--resume: {e}"))?;
    }
    let device = open_device(args)?;
    let local_procs = modelzoo_engine::WorldInfo::from_env()?.map_or(1, |w| w.local_world_size);
    let need = config.memory_need(
        batch.micro,
        matches!(settings.precision, Precision::Amp { .. }),
    );
    runner::check_memory(&need, &device, local_procs)?;
    let ddp = runner::join_data_parallel(args, &device)?;
    runner::settle_amp(
        &mut settings,
        args.string("amp_dtype").unwrap_or("auto"),
        device.default_amp_dtype(),
    );

    let ds = &config.data.dataset;
    let tokenizer = Tokenizer::load(ds.tokenizer.as_deref())?;
    let vocab = config.model.vocab_size;
    if tokenizer.vocab_size() as i64 > vocab {
        bail!(
            "the tokenizer has {} ids but Model.vocab_size is {vocab}: raise Model.vocab_size",
            tokenizer.vocab_size()
        );
    }
    let corpus = Arc::new(Corpus::open(ds.input_dir.as_deref(), &tokenizer)?);
    let seq = ds.max_seq_len as usize;
    let train_set = GptDataset::new(
        Arc::clone(&corpus),
        &ds.split,
        Split::Train,
        seq,
        Some(ds.seed),
    )?;
    let val_set = GptDataset::new(Arc::clone(&corpus), &ds.split, Split::Valid, seq, None)?;
    let micro = batch.micro as usize;
    let accum = batch.accumulate_steps as usize;
    let full_pass = train_set.len() / (micro * world);
    if full_pass < accum {
        bail!(
            "{}: the train split holds {} samples of {} tokens, fewer than one step of {} (local batch); use more data or a smaller batch / max_seq_len",
            corpus.name(),
            train_set.len(),
            seq + 1,
            batch.local
        );
    }
    // FleetX sizes a run by max_steps and lets the sample index wrap around the split.
    let per_epoch = match settings.max_steps {
        Some(m) => full_pass.max(m as usize * accum),
        None => full_pass,
    };
    let train = match &ddp {
        Some(d) => TokenBatches::new(train_set, micro, vocab, per_epoch)
            .sharded(d.world.rank, d.world.world_size),
        None => TokenBatches::new(train_set, micro, vocab, per_epoch),
    };
    let val_batches = val_set.len() / micro;
    let val = (val_batches > 0).then(|| TokenBatches::new(val_set, micro, vocab, val_batches));
    if val.is_none() {
        tracing::warn!(
            "the validation split has fewer than {micro} samples: no val.loss / val.ppl"
        );
    }

    let out_dir = settings
        .ckpt_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    // Before gpt_config.json and the metric log are written: a new run never overwrites an
    // earlier run's.
    modelzoo_engine::checkpoint::check_unused(&settings.ckpt_dir, settings.resume.is_some())?;
    std::fs::create_dir_all(&settings.ckpt_dir)
        .with_context(|| format!("cannot create {}", settings.ckpt_dir.display()))?;
    checkpoint::write_meta(
        &settings.ckpt_dir,
        &Meta {
            model: config.model.clone(),
            tokenizer: ds.tokenizer.clone(),
        },
    )?;
    let model_name = args.string("model_name").unwrap_or("gpt");
    let json = runner::log_path(&out_dir, model_name);
    let mut logger = runner::metric_logger(
        &json,
        settings.resume.is_some(),
        ddp.as_ref(),
        batch.local as usize,
    )
    .with_context(|| format!("cannot create metric log {}", json.display()))?;
    let amp = matches!(settings.precision, Precision::Amp { .. });
    let mut fp64 = None;
    let dev = runner::train_device(&device, &settings, &mut fp64);
    let (peak, peak_source) = peak_flops(dev, &device.name(), amp);
    let module = GptModule::new(
        &config.model,
        config.optimizer.clone(),
        seq as i64,
        peak,
        settings.seed,
    );
    tracing::info!(
        "{model_name} on {} ({}), micro batch {micro} x {accum} accumulation, seq {seq}, precision {:?}; MFU against {:.3e} FLOP/s ({peak_source}); metrics to stdout and {}",
        device.spec(),
        device.name(),
        settings.precision,
        peak,
        json.display()
    );
    let stop = install_signal_handlers().context("cannot install signal handlers")?;
    let fitted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut engine = Engine::new(
            module,
            dev,
            settings,
            Box::new(runner::DlloggerSink(&mut logger)),
        )?
        .with_stop_flag(stop);
        if let Some(ddp) = ddp {
            engine = engine.with_data_parallel(ddp);
        }
        let val_src = val.as_ref().map(|v| v as &dyn BatchSource<TokenBatch>);
        engine.fit(&train, val_src)
    }));
    let summary = match fitted {
        Ok(Ok(s)) => s,
        // Refused before training (checkpoint directory in use, unusable checkpoint to
        // resume, nothing to train): bad input, exit 2. What was logged stays readable.
        Ok(Err(e)) if e.exit_code() == 2 => {
            logger.flush();
            return Err(e.into());
        }
        Ok(Err(e)) => {
            logger.flush();
            return Err(TrainingFailed(e.to_string()).into());
        }
        Err(payload) => {
            logger.flush();
            return Err(TrainingFailed(format!(
                "libtorch failed during training: {}",
                runner::panic_text(payload.as_ref())
            ))
            .into());
        }
    };
    logger
        .finish()
        .map_err(|e| TrainingFailed(format!("writing the metric log {}: {e}", json.display())))?;
    Ok(summary)
}

/// Opens `--device` (cpu, cuda[:N], sdaa[:N]) the way training and generation both use it.
/// `--device`, opened; a bare cuda/sdaa in a data-parallel worker is its LOCAL_RANK card.
fn open_device(args: &ResolvedArgs) -> anyhow::Result<RunDevice> {
    let text = args.string("device").unwrap_or("cpu");
    let spec = runner::worker_device(text.parse::<DeviceSpec>()?)?;
    RunDevice::open(spec).with_context(|| format!("cannot open device {spec}"))
}

fn run_generate(args: &ResolvedArgs) -> anyhow::Result<()> {
    let prompt = args
        .string("prompt")
        .context("--generate needs --prompt \"text to continue\"")?;
    let ckpt: PathBuf = args
        .path("ckpt")
        .context("--generate needs --ckpt <training output_dir or checkpoint>")?
        .to_path_buf();
    let config = load_config(args)?;
    let (file, dir) = checkpoint::resolve(&ckpt)?;
    let meta = checkpoint::read_meta(&dir)?;
    let (model_cfg, tok_path) = match meta {
        Some(m) => (m.model, m.tokenizer),
        None if args.path("config").is_some() => {
            (config.model.clone(), config.data.dataset.tokenizer.clone())
        }
        None => return Err(checkpoint::CheckpointError::NoMeta { dir }.into()),
    };
    model_cfg.validate()?;
    let tokenizer = Tokenizer::load(tok_path.as_deref())?;
    let device = open_device(args)?;
    let mut vs = VarStore::new(Device::Cpu);
    let model = Gpt::new(&vs.root(), &model_cfg);
    checkpoint::load_weights(&vs, &file)?;
    device
        .move_var_store(&mut vs)
        .with_context(|| format!("cannot move the model to {}", device.spec()))?;
    let ids: Vec<i64> = tokenizer
        .encode(prompt)?
        .into_iter()
        .map(i64::from)
        .collect();
    if ids.is_empty() {
        bail!("--prompt is empty after tokenization; give some text to continue");
    }
    if let Some(&bad) = ids.iter().find(|&&i| i >= model_cfg.vocab_size) {
        bail!(
            "the prompt encodes to id {bad}, outside the model vocabulary ({}): wrong tokenizer for this checkpoint?",
            model_cfg.vocab_size
        );
    }
    let seed = args.int("seed").unwrap_or(42) as u64;
    let eos = tokenizer.eos_id().map(i64::from);
    tracing::info!(checkpoint = %file.display(), seed, device = %device.spec(), "generating");
    let outputs = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        generate(&model, &ids, &config.generation, eos, seed, &device)
    }))
    .map_err(|payload| {
        TrainingFailed(format!(
            "libtorch failed during generation on {}: {}",
            device.spec(),
            runner::panic_text(payload.as_ref())
        ))
    })??;
    println!("Prompt: {prompt}");
    for out in outputs {
        let ids: Vec<u32> = out.iter().filter_map(|&i| u32::try_from(i).ok()).collect();
        println!("Generation: {prompt}{}", tokenizer.decode(&ids)?);
    }
    Ok(())
}
