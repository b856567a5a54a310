//! Why a `run_<model>` stops early, and its exit code: one type the entry point ([`crate::app`])
//! and the pieces it runs ([`crate::runner`]) both return.

use std::error::Error;

use crate::EngineError;

/// Why a run stopped early, and so its exit code: 2 for what the user must change, 1 for a
/// run that started and failed (an interrupted run is not an error: it exits 130).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Arguments, config, data, device or memory: exit 2.
    #[error("{}", chain(.0.as_ref()))]
    Input(Box<dyn Error + Send + Sync>),
    /// The engine refused or stopped the run ([`EngineError::exit_code`]).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// libtorch raised an error (tch turns those into panics; caught here): exit 1.
    #[error("libtorch failed {during}: {message}")]
    Libtorch { during: String, message: String },
    /// Failed after it started (writing the metric log, a model's own output): exit 1.
    #[error("{}", chain(.0.as_ref()))]
    Failed(Box<dyn Error + Send + Sync>),
}

impl RunError {
    /// Bad input (exit 2) from any error or message.
    pub fn input(e: impl Into<Box<dyn Error + Send + Sync>>) -> RunError {
        RunError::Input(e.into())
    }

    /// A failure after the run started (exit 1) from any error or message.
    pub fn failed(e: impl Into<Box<dyn Error + Send + Sync>>) -> RunError {
        RunError::Failed(e.into())
    }

    /// Run `f`, turning a libtorch panic into [`RunError::Libtorch`] (`during` says what ran).
    pub fn catch_libtorch<T>(
        during: impl Into<String>,
        f: impl FnOnce() -> Result<T, RunError>,
    ) -> Result<T, RunError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
            Err(RunError::Libtorch {
                during: during.into(),
                message: panic_text(payload.as_ref()),
            })
        })
    }

    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Input(_) => 2,
            RunError::Engine(e) => e.exit_code(),
            RunError::Libtorch { .. } | RunError::Failed(_) => 1,
        }
    }
}

/// An error and its sources, `outer: inner`, leaving out a source the text already quotes.
fn chain(e: &(dyn Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text = format!("{text}: {part}");
        }
        source = s.source();
    }
    text
}

/// The useful part of a libtorch error carried by a tch panic: its message without the C++
/// stack and the dispatcher's list of backends.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    let raw = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("unknown error");
    let first = raw
        .split("\\n")
        .next()
        .unwrap_or(raw)
        .lines()
        .next()
        .unwrap_or("")
        .trim();
    let cut = first
        .find(" is only available for these backends")
        .map_or(first, |i| &first[..i]);
    cut.chars().take(600).collect()
}
