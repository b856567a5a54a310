//! How `run_{{name}}` runs: its recipe for the engine's entry point (`modelzoo_engine::app`) —
//! the engine settings from the `Engine` section and the flags, then the data and the module.

use modelzoo_engine::app::{Built, Plan, Recipe, RunContext, RunError};
use modelzoo_vision::recipe::{self as image, Loaders};
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
        image::plan(std, None)
    }

    fn build(
        &self,
        std: &StandardArgs,
        args: &ModelArgs,
        (): (),
        run: &RunContext,
    ) -> Result<Built<Module{{Camel}}>, RunError> {
        // --dataset_path: CIFAR-10 or an ImageFolder; without it, synthetic images.
        let Loaders { train, val, data } = image::loaders(
            std,
            args.synthetic_samples,
            args.num_classes,
            args.image_size,
            run,
        )?;
        Ok(Built {
            module: Module{{Camel}}::new(args.image_size, args.num_classes, std.lr, run.settings.seed),
            train: Box::new(train),
            val: Some(Box::new(val)),
            data,
            summary: format!("batch {}", std.batch_size),
            on_output_claimed: None,
        })
    }
}
