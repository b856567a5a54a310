//! How `run_llama` runs: its [`Recipe`] for the engine's entry point — pretraining
//! ([`crate::module::LlamaModule`] on the zoo's token data, optionally from Hugging Face
//! weights with `--pretrained`) or, with `--generate`, decoding a prompt from a checkpoint or
//! from Hugging Face weights.

use std::path::Path;

use modelzoo_engine::app::{Built, Plan, Recipe, RunContext, RunError};
use modelzoo_engine::{state_dict, BasicModule};
use run_scripts_template::StandardArgs;

use crate::args::ModelArgs;
use crate::checkpoint;
use crate::config::LlamaConfig;
use crate::model::Llama;
use crate::module::LlamaModule;

/// The merged argument spec built by build.rs (standard.yaml + spec.yaml).
pub const SPEC_YAML: &str = include_str!(concat!(env!("OUT_DIR"), "/run_args.yaml"));

/// `run_llama`: LLaMA pretraining and zero-shot generation.
pub struct LlamaRecipe;

impl Recipe for LlamaRecipe {
    type Args = ModelArgs;
    type Module = LlamaModule;
    type Prepared = LlamaConfig;
    const PROGRAM: &'static str = "run_llama";
    const ABOUT: &'static str =
        "LLaMA (decoder-only pretraining, Hugging Face weights, generation with a KV cache) standard case of the ModelZoo";
    const SPEC_YAML: &'static str = SPEC_YAML;

    fn instead_of_training(
        &self,
        std: &StandardArgs,
        args: &ModelArgs,
    ) -> Option<Result<(), RunError>> {
        args.generate.then(|| run_generate(std, args))
    }

    fn plan(&self, std: &StandardArgs, args: &ModelArgs) -> Result<Plan<LlamaConfig>, RunError> {
        if let Some(p) = &args.pretrained {
            check_pretrained(p)?;
        }
        modelzoo_text::lm::plan(std)
    }

    /// The configured peak learning rate (`Optimizer.lr.max_lr`, or `--lr` over it).
    fn facts(
        &self,
        _std: &StandardArgs,
        _args: &ModelArgs,
        config: &LlamaConfig,
        _device: device_sdaa::DeviceKind,
    ) -> Vec<(&'static str, modelzoo_engine::LogValue)> {
        vec![(
            "lr",
            modelzoo_engine::LogValue::Float(config.optimizer.lr.max_lr),
        )]
    }

    fn build(
        &self,
        _std: &StandardArgs,
        args: &ModelArgs,
        config: LlamaConfig,
        run: &RunContext,
    ) -> Result<Built<LlamaModule>, RunError> {
        let note = if config.model.use_recompute {
            ", activation recompute"
        } else {
            ""
        };
        modelzoo_text::lm::build(
            config,
            run,
            checkpoint::META,
            Llama::new,
            |module| {
                if let Some(path) = &args.pretrained {
                    let tied = module.model().config().tie_word_embeddings;
                    crate::pretrained::load(module.var_store(), path, tied)
                        .map_err(RunError::input)?;
                    tracing::info!(weights = %path.display(), "starting from Hugging Face weights");
                }
                Ok(())
            },
            note,
        )
    }
}

/// `--generate`: load a checkpoint, continue `--prompt`, print the generations.
fn run_generate(std: &StandardArgs, args: &ModelArgs) -> Result<(), RunError> {
    let prompt = args
        .prompt
        .as_deref()
        .ok_or_else(|| RunError::input("--generate needs --prompt \"text to continue\""))?;
    let config =
        LlamaConfig::load(std.config.as_deref(), &std.r#override).map_err(RunError::input)?;
    // The weights: a training checkpoint (with its llama_config.json) or Hugging Face's.
    let (weights, model_cfg, tok_path) = match (&args.ckpt, &args.pretrained) {
        (Some(_), Some(_)) => {
            return Err(RunError::input(
                "--generate takes --ckpt or --pretrained, not both",
            ))
        }
        (None, None) => {
            return Err(RunError::input(
                "--generate needs --ckpt <training output_dir or checkpoint> or --pretrained <model.safetensors> (with -c describing its architecture)",
            ))
        }
        (None, Some(p)) => {
            check_pretrained(p)?;
            if std.config.is_none() {
                return Err(RunError::input(
                    "--generate --pretrained needs -c: a config whose Model section describes the checkpoint's architecture",
                ));
            }
            (
                Weights::Pretrained(p.clone()),
                config.model.clone(),
                config.data.dataset.tokenizer.clone(),
            )
        }
        (Some(ckpt), None) => {
            let ckpt: &Path = ckpt;
            let (file, dir) = checkpoint::resolve(ckpt).map_err(RunError::input)?;
            match checkpoint::read_meta(&dir).map_err(RunError::input)? {
                Some(m) => (Weights::Checkpoint(file), m.model, m.tokenizer),
                None if std.config.is_some() => (
                    Weights::Checkpoint(file),
                    config.model.clone(),
                    config.data.dataset.tokenizer.clone(),
                ),
                None => {
                    return Err(RunError::input(checkpoint::CheckpointError::NoMeta {
                        dir,
                        file: checkpoint::META,
                    }))
                }
            }
        }
    };
    modelzoo_text::decoder::run_and_print(
        std,
        &config,
        &model_cfg,
        tok_path.as_deref(),
        prompt,
        weights.path(),
        |vs| {
            let model = Llama::new(&vs.root(), &model_cfg);
            match &weights {
                Weights::Checkpoint(file) => {
                    checkpoint::load_weights(vs, file).map_err(RunError::input)?
                }
                Weights::Pretrained(file) => {
                    crate::pretrained::load(vs, file, model_cfg.tie_word_embeddings)
                        .map_err(RunError::input)?;
                }
            }
            Ok(model)
        },
    )
}

/// Where `--generate` takes its weights from.
enum Weights {
    /// A training checkpoint (`--ckpt`).
    Checkpoint(std::path::PathBuf),
    /// A Hugging Face safetensors state dict (`--pretrained`).
    Pretrained(std::path::PathBuf),
}

impl Weights {
    fn path(&self) -> &Path {
        match self {
            Weights::Checkpoint(p) | Weights::Pretrained(p) => p,
        }
    }
}

/// `--pretrained` must name a file (see [`state_dict::check_weights_file`]).
fn check_pretrained(path: &Path) -> Result<(), RunError> {
    state_dict::check_weights_file(
        path,
        "give a Hugging Face LlamaForCausalLM .safetensors (e.g. model.safetensors)",
    )
    .map_err(RunError::input)
}
