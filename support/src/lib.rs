//! The ground floor every tool shares, so each thing is done one way: files replaced atomically
//! ([`write_atomic`], [`AtomicFile`]), JUnit XML reports ([`junit`]), commands run under a
//! deadline with nothing left behind ([`process`]), where the kit's own Python environment
//! and emulator are ([`kit`]), where a report may be written ([`output`]: never over a device,
//! a FIFO or one of the tool's own inputs), text put into Markdown reports ([`markdown`]) and
//! files read from user input ([`input`]: regular files only, each within a stated bound).

mod atomic;
pub mod input;
pub mod junit;
pub mod kit;
pub mod markdown;
pub mod output;
pub mod process;

pub use atomic::{write_atomic, AtomicFile};
pub use output::{check_output_path, check_output_paths, write_report, OutputPathError};
