//! `run_scripts_template` holds the one source of truth for the ModelZoo's uniform command
//! line: the standard argument spec (`spec/standard.yaml`) and the code that turns it plus a
//! model's own spec into a `run_<model>` CLI and typed argument structs.

pub mod cli;
pub mod codegen;
pub mod spec;
pub mod typed;

pub use cli::{build_command, present_arg, ArgValue, FromArgs, ResolvedArg, ResolvedArgs};
pub use spec::{ArgDef, ArgRefinement, ArgSpec, ArgType, SpecError};

include!(concat!(env!("OUT_DIR"), "/standard_args.rs"));
