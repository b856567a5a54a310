//! The ground floor every tool shares, so each thing is done one way: files replaced atomically
//! ([`write_atomic`], [`AtomicFile`]), JUnit XML reports ([`junit`]), commands run under a
//! deadline with nothing left behind ([`process`]), and where the kit's own Python environment
//! and emulator are ([`kit`]).

mod atomic;
pub mod junit;
pub mod kit;
pub mod process;

pub use atomic::{write_atomic, AtomicFile};
