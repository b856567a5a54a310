//! The whole config of a decoder language model ([`LmConfig`]): every section loaded, typed and
//! validated, and a training `-c` file checked for completeness.

use std::path::{Path, PathBuf};

use model_config::fleetx::{self, ConfigError, ConfigTree, EngineConfig};
use modelzoo_engine::runner::MemoryNeed;
use serde::{Deserialize, Serialize};

use super::complete::{self, MissingKey};
use super::{
    located, unsupported, Data, DataSection, Distributed, Fused, Generation, Global, ModelSection,
    Optimizer, Profiler, Unsupported, AMP_OPS,
};

/// Sections a decoder language model's config may contain (FleetX names). `Inference`
/// (Paddle inference export) is refused with its own message.
pub const SECTIONS: &[&str] = &[
    "Global",
    "Engine",
    "Data",
    "Model",
    "Optimizer",
    "Generation",
    "Fused",
    "Distributed",
    "Profiler",
];

/// Sections every training `-c` file must hold (after `_base_` merging): what the shipped
/// configs and FleetX's own pretraining layout (`pretrain_gpt_base.yaml`) all have. A file
/// without one is truncated or the wrong file, and would train defaults for it.
/// (`Generation` is only read by `--generate`; FleetX's pretraining configs have none.)
pub const REQUIRED_SECTIONS: &[&str] = &["Engine", "Data", "Model", "Optimizer"];

/// Every section of a decoder language model's config (`M` is its `Model`), typed and
/// validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LmConfig<M> {
    pub engine: EngineConfig,
    /// Resolved from either layout (`Global` batch sizes, `Data.Train`).
    pub data: Data,
    pub model: M,
    pub optimizer: Optimizer,
    pub generation: Generation,
    /// `Global`: its seed and device (its batch sizes are in `data`).
    #[serde(default)]
    pub global: Global,
    /// `Distributed`: only `dp_degree` can be more than 1, checked against the world.
    #[serde(default)]
    pub distributed: Distributed,
    /// `Engine.accumulate_steps` when the config gives it (the engine's own field cannot tell
    /// 1 from empty): it must equal local / micro batch, which is what accumulation is.
    #[serde(default)]
    pub accumulate_steps: Option<u64>,
    /// `Engine.save_load.save_epoch` when the config gives it (checked against the epochs).
    #[serde(default)]
    pub save_epoch: Option<u64>,
}

/// Why a language model's config cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LmConfigError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A value no run can use (any section).
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// A training `-c` file with no sections at all (empty, blank or only comments).
    #[error("{}: the config is empty: training it would silently use {defaults} for everything; give a complete config (e.g. {example}), or leave out -c to train those defaults on purpose", path.display())]
    EmptyFile {
        path: PathBuf,
        defaults: &'static str,
        example: &'static str,
    },
    /// A `-c` file (with its bases) without a section every training config has, or with a
    /// section that lacks keys every complete one gives: cut off, or the wrong file.
    #[error("{0}")]
    Incomplete(Box<Incomplete>),
}

/// What an incomplete config lacks (see [`LmConfigError::Incomplete`]).
#[derive(Debug, thiserror::Error)]
#[error("{}: incomplete config: {}{}; {program} would use its defaults for what is missing ({defaults} for the model): give a complete config (see {example}), or leave out -c to use the defaults on purpose", path.display(), incomplete(missing_sections, missing_keys, found), ending(end))]
pub struct Incomplete {
    pub path: PathBuf,
    /// Of [`REQUIRED_SECTIONS`] (training only).
    pub missing_sections: Vec<String>,
    /// Keys the file's sections lack: [`ModelSection::REQUIRED_KEYS`] (training only) and
    /// [`complete::SECTION_KEYS`].
    pub missing_keys: Vec<MissingKey>,
    /// The sections the file has.
    pub found: Vec<String>,
    pub end: Option<fleetx::FileEnd>,
    pub program: &'static str,
    pub defaults: &'static str,
    pub example: &'static str,
}

/// `no `Optimizer` section (found: Engine, Data, Model); `Model` has no hidden_size, ...`.
fn incomplete(sections: &[String], keys: &[MissingKey], found: &[String]) -> String {
    let mut parts = Vec::new();
    if !sections.is_empty() {
        let names: Vec<String> = sections.iter().map(|m| format!("`{m}`")).collect();
        parts.push(format!(
            "no {} section (found: {}; a training config has {})",
            names.join(", "),
            found.join(", "),
            REQUIRED_SECTIONS.join(", ")
        ));
    }
    if !keys.is_empty() {
        parts.push(complete::describe(keys));
    }
    parts.join("; ")
}

/// `; the file ends at line N inside `Model:` — truncated?` when the `-c` file ends inside a
/// section (the usual sign of a file cut off), else nothing.
fn ending(end: &Option<fleetx::FileEnd>) -> String {
    match end {
        Some(fleetx::FileEnd {
            path,
            line,
            section: Some(section),
        }) => format!(
            "; {} ends at line {line} inside `{section}:` — truncated?",
            path.display()
        ),
        _ => String::new(),
    }
}

impl<M: ModelSection> LmConfig<M> {
    /// [`LmConfig::load`] for training: a `-c` file must describe the whole run. An empty or
    /// truncated file parses (as nothing, without its last sections, or with a `Model` cut
    /// short) and would otherwise train the built-in defaults for what is missing — a
    /// different run from the one asked for, and one that may not fit in memory. So the file
    /// (with its `_base_` files) must hold every [`REQUIRED_SECTIONS`] section, every
    /// [`ModelSection::REQUIRED_KEYS`] key and the keys of [`complete::SECTION_KEYS`] in the
    /// sections it holds (an `-o` override may give a key), and name the training module.
    /// Without `-c` the defaults are what the user asked for.
    pub fn load_for_training(
        path: Option<&Path>,
        overrides: &[String],
    ) -> Result<LmConfig<M>, LmConfigError> {
        let mut tree = fleetx::load(path, &[])?;
        // Sections must come from the file: an override does not complete a cut-off file.
        let mut missing_sections = Vec::new();
        let found = tree.section_names();
        if let Some(path) = path {
            if found.is_empty() {
                return Err(LmConfigError::EmptyFile {
                    path: path.to_path_buf(),
                    defaults: M::DEFAULTS,
                    example: M::EXAMPLE,
                });
            }
            missing_sections = REQUIRED_SECTIONS
                .iter()
                .filter(|s| !tree.is_set(&[s]))
                .map(|s| s.to_string())
                .collect();
        }
        for text in overrides {
            tree.apply_override(text)?;
        }
        if let Some(path) = path {
            // A section reported missing is not reported again key by key.
            let held: Vec<String> = found
                .iter()
                .filter(|s| !missing_sections.contains(s))
                .cloned()
                .collect();
            let missing_keys = complete::missing_keys(&tree, &held, M::REQUIRED_KEYS);
            if !missing_sections.is_empty() || !missing_keys.is_empty() {
                return Err(Self::incomplete(
                    path,
                    missing_sections,
                    missing_keys,
                    found,
                    &tree,
                ));
            }
        }
        let config: LmConfig<M> = LmConfig::from_tree(&tree)?;
        if let Some(module) = config.model.module().filter(|m| *m != M::TRAINING_MODULE) {
            return Err(unsupported(
                "Model.module",
                module,
                format!(
                    "{} trains `{}` (FleetX's other modules are for generation or evaluation)",
                    M::PROGRAM,
                    M::TRAINING_MODULE
                ),
            )
            .into());
        }
        Ok(config)
    }

    /// Reads `-c file` (optional) with `-o` overrides, then validates every section. The
    /// sections the file holds must be whole ([`complete::SECTION_KEYS`]; `Model`'s keys are
    /// checked for training only, `--generate` rebuilds the model from its checkpoint).
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<LmConfig<M>, LmConfigError> {
        let mut tree = fleetx::load(path, &[])?;
        let found = tree.section_names();
        for text in overrides {
            tree.apply_override(text)?;
        }
        if let Some(path) = path {
            let missing_keys = complete::missing_keys(&tree, &found, &[]);
            if !missing_keys.is_empty() {
                return Err(Self::incomplete(
                    path,
                    Vec::new(),
                    missing_keys,
                    found,
                    &tree,
                ));
            }
        }
        LmConfig::from_tree(&tree)
    }

    fn incomplete(
        path: &Path,
        missing_sections: Vec<String>,
        missing_keys: Vec<MissingKey>,
        found: Vec<String>,
        tree: &ConfigTree,
    ) -> LmConfigError {
        LmConfigError::Incomplete(Box::new(Incomplete {
            path: path.to_path_buf(),
            missing_sections,
            missing_keys,
            found,
            end: tree.file_end(),
            program: M::PROGRAM,
            defaults: M::DEFAULTS,
            example: M::EXAMPLE,
        }))
    }

    /// Typed sections of an already merged tree, both layouts resolved; every section that
    /// only FleetX has (`Distributed`, `Profiler`, `Fused`, `Inference`) checked so a key we
    /// cannot honour is refused.
    pub fn from_tree(tree: &ConfigTree) -> Result<LmConfig<M>, LmConfigError> {
        if tree.get(&["Inference"]).is_some() {
            return Err(unsupported(
                "Inference",
                located(tree, &["Inference"], "section"),
                format!(
                    "Paddle inference export is not implemented; remove the section ({} --generate decodes from a training checkpoint)",
                    M::PROGRAM
                ),
            )
            .into());
        }
        tree.check_sections(SECTIONS)?;
        let global: Global = tree.section("Global")?.unwrap_or_default();
        let data: DataSection = tree.section("Data")?.unwrap_or_default();
        let distributed: Distributed = tree.section("Distributed")?.unwrap_or_default();
        let profiler: Profiler = tree.section("Profiler")?.unwrap_or_default();
        let fused: Fused = tree.section("Fused")?.unwrap_or_default();
        let engine: EngineConfig = tree.section("Engine")?.unwrap_or_default();
        let config = LmConfig {
            data: data.resolve(&global, tree)?,
            model: tree.section("Model")?.unwrap_or_default(),
            optimizer: tree.section("Optimizer")?.unwrap_or_default(),
            generation: tree.section("Generation")?.unwrap_or_default(),
            accumulate_steps: tree
                .is_set(&["Engine", "accumulate_steps"])
                .then_some(engine.accumulate_steps),
            save_epoch: tree
                .is_set(&["Engine", "save_load", "save_epoch"])
                .then_some(engine.save_load.save_epoch),
            engine,
            global,
            distributed,
        };
        global_checks(&config.global)?;
        config.distributed.validate()?;
        profiler.validate()?;
        if fused.tensor_fusion {
            return Err(unsupported(
                "Fused.tensor_fusion",
                true,
                "Paddle tensor fusion has no libtorch equivalent; set it to False",
            )
            .into());
        }
        config.validate()?;
        Ok(config)
    }

    /// Cross-section checks on top of each section's own.
    pub fn validate(&self) -> Result<(), Unsupported> {
        self.model.validate()?;
        self.optimizer.validate(M::PROGRAM)?;
        self.generation.validate()?;
        self.engine_checks()?;
        // The names in the precision lists must be known even with AMP off.
        self.check_amp_lists(false)?;
        let seq = self.data.dataset.max_seq_len;
        let max = self.model.max_position_embeddings();
        if seq == 0 || seq as i64 > max {
            return Err(unsupported(
                "Data.dataset.max_seq_len",
                seq,
                format!("must be in 1..={max} (Model.max_position_embeddings)"),
            ));
        }
        self.data.batch_size.resolve(1)?;
        Ok(())
    }

    /// `Engine.mix_precision.custom_black_list` / `custom_white_list` against what AMP does in
    /// the network ([`AMP_OPS`]); `amp`: whether this run trains under AMP.
    pub fn check_amp_lists(&self, amp: bool) -> Result<(), Unsupported> {
        self.engine
            .mix_precision
            .check_lists(amp, AMP_OPS)
            .map_err(|e| {
                let key = if e.list == "custom_black_list" {
                    "Engine.mix_precision.custom_black_list"
                } else {
                    "Engine.mix_precision.custom_white_list"
                };
                unsupported(key, e.name, e.reason)
            })
    }

    /// `Engine` keys the engine has no setting for: refused unless what we do anyway.
    fn engine_checks(&self) -> Result<(), Unsupported> {
        let e = &self.engine;
        if let Some(t) = e.test_iters {
            return Err(unsupported(
                "Engine.test_iters",
                t,
                format!(
                    "{} has no test pass (FleetX runs it from tools/eval.py; training evaluates the validation split every eval_freq steps); leave it empty",
                    M::PROGRAM
                ),
            ));
        }
        Ok(())
    }

    /// A given `Engine.save_load.save_epoch` for a run of `epochs` epochs (the flags
    /// applied): the engine saves every `save_steps` and at the end of the run, never at other
    /// epoch ends, so only a `save_epoch` reaching the last epoch is what we do.
    pub fn check_save_epoch(&self, epochs: u64) -> Result<(), Unsupported> {
        let epochs = epochs.max(1);
        let Some(save_epoch) = self.save_epoch else {
            return Ok(());
        };
        if save_epoch < epochs {
            return Err(unsupported(
                "Engine.save_load.save_epoch",
                save_epoch,
                format!(
                    "checkpoints are saved every save_steps steps and at the end of the run, not at epoch ends; for a run of {epochs} epoch(s) set save_epoch to {epochs} or more (the run's end is the last epoch's end) and use save_steps"
                ),
            ));
        }
        Ok(())
    }

    /// See [`ModelSection::memory_need`].
    pub fn memory_need(&self, micro: u64, amp: bool) -> MemoryNeed {
        self.model.memory_need(&self.data, micro, amp)
    }
}

/// `Global` keys checked without the command line (the device name; batch sizes are
/// resolved into `Data`).
fn global_checks(global: &Global) -> Result<(), Unsupported> {
    global.device_kind().map(drop)
}
