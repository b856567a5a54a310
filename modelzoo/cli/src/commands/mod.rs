//! One module per subcommand: its clap `Args` and a `run` that calls the library doing the work.

pub mod bench;
pub mod bisect;
pub mod ci;
pub mod compare;
pub mod diff;
pub mod env;
pub mod migrate;
pub mod new;
pub mod op;
pub mod port;
pub mod validate;
