//! `modelzoo env` — runs the `modelzoo-env` binary installed beside `modelzoo` with the same
//! arguments (`modelzoo env --help` lists them).
//!
//! The environment report has to load libtorch and the device libraries; keeping it in its own
//! binary means every other `modelzoo` command starts without loading libtorch.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

#[derive(clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// Arguments for the environment report (see `modelzoo env --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe()?;
    let env_bin = exe.with_file_name("modelzoo-env");
    if !env_bin.is_file() {
        anyhow::bail!(
            "cannot find {}: `modelzoo env` runs the modelzoo-env binary built beside modelzoo \
             (build it with `make build`)",
            env_bin.display()
        );
    }
    let err = Command::new(&env_bin).args(&args.args).exec();
    anyhow::bail!("cannot run {}: {err}", env_bin.display())
}
