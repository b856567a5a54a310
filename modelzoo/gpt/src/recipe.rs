//! How `run_gpt` runs: its [`Recipe`] for the engine's entry point — FleetX pretraining
//! ([`crate::module::GptModule`] on the token data) or, with `--generate`, decoding a prompt
//! from a checkpoint.

use std::path::Path;

use modelzoo_engine::app::{Built, OutputWriter, Plan, Recipe, RunContext, RunError};
use run_scripts_template::StandardArgs;

use crate::args::ModelArgs;
use crate::checkpoint::{self, Meta};
use crate::config::GptConfig;
use crate::model::Gpt;
use crate::module::{peak_flops, GptModule};
use modelzoo_text::lm::TokenData;

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
        let data = TokenData::load(&config.data, config.model.vocab_size, run)?;
        let (seq, micro, accum) = (data.seq, data.micro, data.accumulate);
        // The checkpoints carry what `--generate` needs to rebuild the model and tokenizer.
        let ckpt_dir = run.settings.ckpt_dir.clone();
        let meta = Meta {
            model: config.model.clone(),
            tokenizer: config.data.dataset.tokenizer.clone(),
        };
        let write_meta: OutputWriter =
            Box::new(move || checkpoint::write_meta(&ckpt_dir, &meta).map_err(RunError::input));
        let amp = matches!(
            run.settings.precision,
            modelzoo_engine::Precision::Amp { .. }
        );
        let (peak, peak_source) = peak_flops(run.train_device, &run.device.name(), amp);
        let module = GptModule::new(
            |vs| Gpt::new(vs, &config.model),
            config.optimizer.clone(),
            seq as i64,
            peak,
            run.settings.seed,
        );
        Ok(Built {
            module,
            train: Box::new(data.train),
            val: data.val,
            data: format!("the training data of {}", data.corpus),
            summary: format!(
                "micro batch {micro} x {accum} accumulation, seq {seq}; MFU against {peak:.3e} FLOP/s ({peak_source})"
            ),
            on_output_claimed: Some(write_meta),
        })
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
    modelzoo_text::generate::run_and_print(
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
