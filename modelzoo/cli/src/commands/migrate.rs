//! `modelzoo migrate` — not implemented yet.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`modelzoo migrate` is not implemented yet")
}
