//! `modelzoo op new NAME [--dir DIR]`: scaffold an op library for the sdaa device and the CPU
//! (docs/op.md, "Scaffold"); the rendering and its checks are `modelzoo_scaffold::op`.

use std::path::PathBuf;
use std::process::ExitCode;

use modelzoo_scaffold::op;

#[derive(clap::Args)]
pub struct NewArgs {
    /// The library's name: its Python package, C++ namespace and `torch.ops.NAME` (lower-case
    /// letters, digits and `_`, starting with a letter).
    pub name: String,
    /// Where to write it (default: ./NAME). Nothing in it is ever overwritten.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Writes the library and says what to do next; a bad name or a file in the way is an error
/// (exit 2) that names it, and writes nothing.
pub fn run(a: NewArgs) -> anyhow::Result<ExitCode> {
    let dir = a.dir.unwrap_or_else(|| PathBuf::from(&a.name));
    let plan = op::plan(&a.name, &dir)?;
    op::apply(&plan)?;
    for (path, _) in &plan.files {
        println!("created {}", path.display());
    }
    let name = &a.name;
    println!(
        "next: build and test it — cd {} && python -c \"import {name}\" && python -m unittest \
         discover -s tests (the build takes about a minute); write the sdaa kernel in \
         {name}/csrc/sdaa.cpp; check it with modelzoo op check --ref {name}:scale_add_reference \
         --impl {name}:scale_add --inputs {name}.inputs:cases --backward",
        plan.dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
