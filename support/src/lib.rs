//! Small file formats the tools share, so each is written one way: files replaced
//! atomically ([`write_atomic`], [`AtomicFile`]) and JUnit XML reports ([`junit`]).

mod atomic;
pub mod junit;

pub use atomic::{write_atomic, AtomicFile};
