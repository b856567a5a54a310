//! What `run_gpt` does with its parsed arguments: `--generate` (load a checkpoint, decode a
//! prompt) or training. Training must go through `modelzoo_engine`, whose `BasicModule` does
//! not yet take token batches or AdamW, so a training request is refused with that reason
//! rather than run by a second loop here.

use std::path::PathBuf;

use anyhow::{bail, Context};
use run_scripts_template::{spec::ArgSpec, ResolvedArgs};
use tch::nn::VarStore;
use tch::Device;

use crate::checkpoint;
use crate::config::GptConfig;
use crate::generate::generate;
use crate::model::Gpt;
use crate::tokenizer::Tokenizer;

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
    // Validate the config first so config mistakes are reported as such.
    load_config(args)?;
    bail!(
        "training is not available yet: run_gpt must train through modelzoo-engine, whose \
         BasicModule/Loader take image batches and SGD only; GPT needs token batches and AdamW \
         there first (see docs/run_gpt.md). Use --generate with a checkpoint meanwhile"
    )
}

fn run_generate(args: &ResolvedArgs) -> anyhow::Result<()> {
    let prompt = args
        .string("prompt")
        .context("--generate needs --prompt \"text to continue\"")?;
    let ckpt: PathBuf = args
        .path("ckpt")
        .context("--generate needs --ckpt <training output_dir or checkpoint>")?
        .to_path_buf();
    let device = args.string("device").unwrap_or("cpu");
    if device != "cpu" {
        bail!("--generate runs on --device cpu only for now (got `{device}`)");
    }
    let config = load_config(args)?;
    let (weights, dir) = checkpoint::resolve(&ckpt)?;
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
    let mut vs = VarStore::new(Device::Cpu);
    let model = Gpt::new(&vs.root(), &model_cfg);
    vs.load(&weights).map_err(|e| {
        anyhow::anyhow!(
            "cannot load weights {} into the GPT described by {}: {e}",
            weights.display(),
            dir.join(checkpoint::META).display()
        )
    })?;
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
    tracing::info!(weights = %weights.display(), seed, "generating");
    let outputs = generate(&model, &ids, &config.generation, eos, seed, Device::Cpu)?;
    println!("Prompt: {prompt}");
    for out in outputs {
        let ids: Vec<u32> = out.iter().filter_map(|&i| u32::try_from(i).ok()).collect();
        println!("Generation: {prompt}{}", tokenizer.decode(&ids)?);
    }
    Ok(())
}
