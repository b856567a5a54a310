//! `modelzoo new` — not implemented yet.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`modelzoo new` is not implemented yet")
}
