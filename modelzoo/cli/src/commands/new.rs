//! `modelzoo new <name> --kind python|rust`: scaffold a model directory in ModelZoo shape from
//! the templates of modelzoo-scaffold, plus its model.yaml entry — or, with `--train-script`,
//! the ModelZoo files around a training script that exists (a project `modelzoo port`
//! migrated). Never overwrites.

use std::path::PathBuf;
use std::process::ExitCode;

use modelzoo_scaffold::{self as scaffold, Kind, NewModel};

#[derive(Clone, Copy, clap::ValueEnum)]
enum KindArg {
    /// Tecorigin ModelZoo layout: run_scripts/ with argument.py, formate_cmd.py, run_<name>.py.
    Python,
    /// A Rust model crate of this repository with a run_<name> binary.
    Rust,
}

#[derive(clap::Args)]
pub struct Args {
    /// Model name. Python: the directory name (`ResNet`, `MobileNet_V2`, `SE-ResNet`), its
    /// snake case names run_<name>.py and the model.yaml entry. Rust: lowercase letters, digits
    /// and `_` (the binary run_<name>).
    name: String,
    /// Which layout to create.
    #[arg(long, value_enum)]
    kind: KindArg,
    /// ModelZoo category; a Python model is created under <root>/<category>/<name>.
    #[arg(long, default_value = "Classification")]
    category: String,
    /// Zoo root: holds model_config/model.yaml (created when missing).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// The model directory, relative to --root (default <category>/<name> for Python,
    /// modelzoo/<name> for Rust).
    #[arg(long, value_name = "DIR")]
    dir: Option<String>,
    /// Python: scaffold around this training script of the model directory (relative to it)
    /// instead of writing a new train.py; README.md and requirements.txt are kept when present.
    #[arg(long, value_name = "FILE")]
    train_script: Option<PathBuf>,
    /// List what would be created and the model.yaml entry; write nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let req = NewModel {
        name: args.name,
        kind: match args.kind {
            KindArg::Python => Kind::Python,
            KindArg::Rust => Kind::Rust,
        },
        category: args.category,
        root: args.root,
        dir: args.dir,
        train_script: args.train_script,
    };
    let plan = scaffold::plan(&req)?;
    let verb = if args.dry_run {
        "would create"
    } else {
        "created"
    };
    if !args.dry_run {
        scaffold::apply(&plan)?;
    }
    for (path, _) in &plan.files {
        println!("{verb} {}", path.display());
    }
    for path in &plan.kept {
        println!("kept {} (already there)", path.display());
    }
    for note in &plan.notes {
        println!("note: {note}");
    }
    println!(
        "{} entry `{}` in {}",
        if args.dry_run { "would add" } else { "added" },
        plan.entry.name,
        plan.model_yaml.display()
    );
    if req.kind == Kind::Rust && !args.dry_run {
        println!(
            "next: add \"{}\" to [workspace] members in the root Cargo.toml",
            plan.entry.path
        );
    }
    Ok(ExitCode::SUCCESS)
}
