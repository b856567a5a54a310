//! `dllogger` speaks the log format the whole Tecorigin ModelZoo uses.
//!
//! The writer ([`Logger`]) is compatible with `tcap_dllogger` (stdout `TCAPPDLL ...` lines and
//! the JSON stream backend); the reader turns any log a user has — our JSON lines, tcap JSON
//! and stdout lines, NVIDIA `DLLL` lines, `Epoch[3]: train_loss 2.53 | val_loss 2.50` epoch
//! summaries, CSV metric files, the loss lines plain scripts print (`Loss: 0.302`,
//! `Loss_D: 1.2 Loss_G: 3.4`, tqdm postfixes, dict prints) — into [`Record`]s in one
//! bounded-memory pass, and keeps what `PARAMETER` records say about the run.
//!
//! ```no_run
//! use dllogger::{JsonStreamBackend, Logger, Metadata, StdOutBackend, Verbosity};
//! let mut log = Logger::new(vec![
//!     Box::new(StdOutBackend::new(Verbosity::Default)),
//!     Box::new(JsonStreamBackend::create(Verbosity::Verbose, "train.json")?),
//! ]);
//! log.metadata("train.ips", Metadata::new().with_unit("imgs/s").with_goal("MAXIMIZE"));
//! log.log((0, 3), &[("train.loss", 0.55.into()), ("train.ips", 2335.0.into())], Verbosity::Default);
//! log.finish()?;
//! for rec in dllogger::open("train.json".as_ref())? {
//!     println!("{:?} {:?}", rec.iteration, rec.get("train.loss"));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod backend;
mod call;
mod clock;
mod csv;
mod logger;
mod parse;
mod pyfmt;
mod rank;
mod reader;
mod record;

pub use backend::{Backend, JsonStreamBackend, StdOutBackend};
pub use call::{Step, Value, Verbosity};
pub use clock::Timestamp;
pub use logger::Logger;
pub use parse::{parse_line, LineParse};
pub use pyfmt::write_py_float;
pub use rank::{rank_from_env, rank_from_vars};
pub use reader::{
    open, FormatCounts, LogReader, ReadError, ReadStats, DEFAULT_MAX_LINE, MAX_PARAMETERS,
};
pub use record::{LogFormat, Metadata, Record};
