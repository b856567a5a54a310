//! How `run_gpt` runs: its [`Recipe`] for the engine's entry point — FleetX pretraining
//! ([`crate::module::GptModule`] on the token data) or, with `--generate`, decoding a prompt
//! from a checkpoint.

use std::path::Path;

use modelzoo_engine::app::{Built, Plan, Recipe, RunContext, RunError};
use run_scripts_template::StandardArgs;

use crate::args::ModelArgs;
use crate::checkpoint;
use crate::config::GptConfig;
use crate::model::Gpt;
use crate::module::GptModule;

/// The merged argument spec built by build.rs (standard.yaml + spec.yaml).
pub const SPEC_YAML: &str = include_str!(concat!(env!("OUT_DIR"), "/run_args.yaml"));

/// `run_gpt`: FleetX's GPT single-card pretraining and zero-shot generation.
pub struct GptRecipe;

impl Recipe for GptRecipe {
    type Args = ModelArgs;
    type Module = GptModule;
    type Prepared = GptConfig;
    const PROGRAM: &'static str = "run_gpt";
    const ABOUT: &'static str =
        "GPT (FleetX single-card pretraining and zero-shot generation) standard case of the ModelZoo";
    const SPEC_YAML: &'static str = SPEC_YAML;

    fn instead_of_training(
        &self,
        std: &StandardArgs,
        args: &ModelArgs,
    ) -> Option<Result<(), RunError>> {
        args.generate.then(|| run_generate(std, args))
    }

    fn plan(&self, std: &StandardArgs, _args: &ModelArgs) -> Result<Plan<GptConfig>, RunError> {
        modelzoo_text::lm::plan(std)
    }

    /// The configured peak learning rate (`Optimizer.lr.max_lr`, or `--lr` over it).
    fn facts(
        &self,
        _std: &StandardArgs,
        _args: &ModelArgs,
        config: &GptConfig,
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
        _args: &ModelArgs,
        config: GptConfig,
        run: &RunContext,
    ) -> Result<Built<GptModule>, RunError> {
        modelzoo_text::lm::build(config, run, checkpoint::META, Gpt::new, |_| Ok(()), "")
    }
}

/// `--generate`: load a checkpoint, continue `--prompt`, print the generations.
fn run_generate(std: &StandardArgs, args: &ModelArgs) -> Result<(), RunError> {
    let prompt = args
        .prompt
        .as_deref()
        .ok_or_else(|| RunError::input("--generate needs --prompt \"text to continue\""))?;
    let ckpt: &Path = args.ckpt.as_deref().ok_or_else(|| {
        RunError::input("--generate needs --ckpt <training output_dir or checkpoint>")
    })?;
    let config =
        GptConfig::load(std.config.as_deref(), &std.r#override).map_err(RunError::input)?;
    let (file, dir) = checkpoint::resolve(ckpt).map_err(RunError::input)?;
    let meta = checkpoint::read_meta(&dir).map_err(RunError::input)?;
    let (model_cfg, tok_path) = match meta {
        Some(m) => (m.model, m.tokenizer),
        None if std.config.is_some() => {
            (config.model.clone(), config.data.dataset.tokenizer.clone())
        }
        None => {
            return Err(RunError::input(checkpoint::CheckpointError::NoMeta {
                dir,
                file: checkpoint::META,
            }))
        }
    };
    modelzoo_text::decoder::run_and_print(
        std,
        &config,
        &model_cfg,
        tok_path.as_deref(),
        prompt,
        &file,
        |vs| {
            let model = Gpt::new(&vs.root(), &model_cfg);
            checkpoint::load_weights(vs, &file).map_err(RunError::input)?;
            Ok(model)
        },
    )
}
