//! `run_scripts_template` holds the one source of truth for the ModelZoo's uniform command
//! line: the standard argument spec (`spec/standard.yaml`), the code that turns it plus a
//! model's own spec into a `run_<model>` CLI, and the templates `modelzoo new` scaffolds from.

pub mod spec;

pub use spec::{ArgDef, ArgSpec, ArgType, SpecError};
