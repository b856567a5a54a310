//! How `run_{{name}}` runs: its recipe for the engine's entry point (`modelzoo_engine::app`) —
//! the engine settings from the `Engine` section and the flags, then the data and the module.

use modelzoo_engine::app::{Built, Plan, Recipe, RunContext, RunError};
use modelzoo_engine::runner;
use modelzoo_vision::ImageData;
use run_scripts_template::StandardArgs;

use crate::args::ModelArgs;
use crate::module::Module{{Camel}};

/// `run_{{name}}`.
pub struct Recipe{{Camel}};

impl Recipe for Recipe{{Camel}} {
    type Args = ModelArgs;
    type Module = Module{{Camel}};
    type Prepared = ();
    const PROGRAM: &'static str = "run_{{name}}";
    const ABOUT: &'static str = "{{title}} standard case of the ModelZoo";
    const SPEC_YAML: &'static str = include_str!(concat!(env!("OUT_DIR"), "/run_args.yaml"));

    fn plan(&self, std: &StandardArgs, _args: &ModelArgs) -> Result<Plan<()>, RunError> {
        Ok(Plan {
            settings: runner::settings_from_config(std, &["Engine"])?,
            batch_size: std.batch_size as usize,
            memory: None,
            prepared: (),
        })
    }

    fn build(
        &self,
        std: &StandardArgs,
        args: &ModelArgs,
        (): (),
        run: &RunContext,
    ) -> Result<Built<Module{{Camel}}>, RunError> {
        let (classes, size) = (args.num_classes as usize, args.image_size as usize);
        let seed = run.settings.seed;
        // --dataset_path: CIFAR-10 or an ImageFolder; without it, synthetic images.
        let (rank, world) = run.rank_and_world();
        let (train, val) = ImageData {
            dataset_path: std.dataset_path.as_deref(),
            synthetic_samples: args.synthetic_samples as usize,
            num_classes: classes,
            image_size: size,
            batch_size: std.batch_size as usize,
            num_workers: std.num_workers as usize,
            seed,
        }
        .loaders(rank, world)
        .map_err(RunError::input)?;
        Ok(Built {
            module: Module{{Camel}}::new(size as i64, classes as i64, std.lr, seed),
            train: Box::new(train),
            val: Some(Box::new(val)),
            data: "the synthetic training set".into(),
            summary: format!("batch {}", std.batch_size),
            on_output_claimed: None,
        })
    }
}
