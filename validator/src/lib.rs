//! `validator` answers the two questions every ported model must pass: "is this directory in
//! ModelZoo shape?" ([`layout`]) and "does the SDAA run match CUDA within 1%?" ([`compare`]),
//! with a report an adapter can paste into the README ([`report`]); when it does not, [`diff`]
//! finds the op that drifted.

pub mod compare;
mod devices;
pub mod diff;
pub mod finding;
#[cfg(test)]
mod house;
pub mod layout;
pub mod losspy;
mod markdown;
mod render;
/// The compare report's pages, at the path its users have always named.
pub use compare::report;
pub mod review;
pub mod rules;
