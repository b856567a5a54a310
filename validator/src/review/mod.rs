//! What a careful reviewer checks across the files of a model directory, and across the zoo
//! (`modelzoo validate`, on by default in the command; `Validator::with_review`): local imports
//! that resolve to nothing, paths that commands name and that do not exist, logs that are not
//! what their names say, quoted precision figures the shipped logs do not give, claims about
//! cards the command contradicts, framework pins and local wheels in any requirements file,
//! comparison scripts that print constants, results whose own verdict is fail — and, over a
//! tree, near-duplicate model names, misspelt standard names, committed junk, oversized files
//! and adapted files without the "Adapted to tecorigin hardware" marker.
//!
//! Every rule reads with bounds ([`files`]): text files up to 4 MiB, logs streamed, a model
//! directory's listing capped, no symlink followed.

mod cards;
mod commands;
mod constant;
mod files;
mod imports;
mod logs;
mod paths;
pub mod report;
mod requirements;
mod zoo;

use std::path::{Path, PathBuf};

use crate::layout::{DirReport, Finding, Rule, Severity};

pub use logs::{LossPair, PairSource};

/// The review rules, in the order they are checked.
pub const RULES: &[Rule] = &[
    Rule {
        id: "imports.local",
        severity: Severity::Error,
        description: "every module a Python file imports resolves: relative imports to a file or package in the directory, other names to one in the directory, the standard library, a requirements file, a pip/mim install the README or a script runs, or a package the SDAA environment or the ModelZoo's usual stacks provide",
    },
    Rule {
        id: "paths.command",
        severity: Severity::Error,
        description: "every file a command of test.sh (any shell script) or the README runs or reads — the Python script, its --config, `pip install -r FILE`, loss.py's --cuda-log, `bash x.sh` — exists where the command runs (after its `cd`); files the same script wrote first and paths outside the directory are not checked",
    },
    Rule {
        id: "paths.cd",
        severity: Severity::Error,
        description: "a README's `cd <ModelZoo_path>/...` names this model's own directory (exact case), not another model's",
    },
    Rule {
        id: "paths.link",
        severity: Severity::Warning,
        description: "every relative link and image of the model README (Markdown or <img src>) that stays inside the directory points to a file that exists",
    },
    Rule {
        id: "commands.consistent",
        severity: Severity::Warning,
        description: "test.sh trains with the script and config the README's training command names (not another model's)",
    },
    Rule {
        id: "cards.claim",
        severity: Severity::Warning,
        description: "a README sentence claiming one card (单卡, 单机单卡, single card) is not followed by a command that starts several processes (--nproc_per_node N > 1), and test.sh starts as many processes as the README's command",
    },
    Rule {
        id: "logs.device",
        severity: Severity::Error,
        description: "a log named for a device holds a run on it: a cuda/gpu log has no Torch-SDAA banner and no `--device sdaa`; an sdaa log shows no `--device cuda|cpu` or `Device: cpu`",
    },
    Rule {
        id: "logs.identical",
        severity: Severity::Error,
        description: "the CUDA log and the SDAA log of a pair are not byte-identical and do not hold the same loss values (a copied baseline proves nothing)",
    },
    Rule {
        id: "results.figures",
        severity: Severity::Error,
        description: "the MeanRelativeError / MeanAbsoluteError a README or a combined loss file (=== CUDA === / === SDAA === / === RESULT ===) quotes are what the ModelZoo's loss.py rule gives on the logs the directory ships (to the digits quoted)",
    },
    Rule {
        id: "results.verdict",
        severity: Severity::Error,
        description: "the results a README or a combined loss file report do not carry the verdict `fail`",
    },
    Rule {
        id: "results.signed-pass",
        severity: Severity::Warning,
        description: "a `pass` whose mean relative error is beyond ±5%: it passes only because loss.py's means are signed (a negative mean passes) — the SDAA curve is far from CUDA's",
    },
    Rule {
        id: "results.unverifiable",
        severity: Severity::Info,
        description: "a README quotes loss.py figures but the directory ships no CUDA/SDAA log pair (nor combined loss file) to recompute them from",
    },
    Rule {
        id: "results.constant",
        severity: Severity::Error,
        description: "a comparison script (loss.py and the like) computes its MeanRelativeError / MeanAbsoluteError: it does not print or assign them as constants",
    },
    Rule {
        id: "requirements.tree",
        severity: Severity::Error,
        description: "no requirements file anywhere in the directory (run_scripts/ included) pins torch, torch_sdaa or paddle, or installs a local wheel or path (`file://`, `pkg @ file:...`, `./x.whl`); the root file's torch/paddle are requirements.no-framework's",
    },
    Rule {
        id: "zoo.near-duplicate",
        severity: Severity::Warning,
        description: "(--all) no two model directories have names that differ only in case or punctuation (MobileNet_V2 / Mobilenet_v2)",
    },
    Rule {
        id: "zoo.misspelt-name",
        severity: Severity::Warning,
        description: "standard names are spelt exactly: README.md, requirements.txt, run_scripts/ and run_scripts' README.md, argument.py, formate_cmd.py, test.sh (not `run_script`, `README.MD`, `readme`, `requirement.txt`), and no file or directory name starts or ends with a space",
    },
    Rule {
        id: "zoo.junk",
        severity: Severity::Warning,
        description: "no committed junk: tensorboard event files, executables (.exe/.dll), wget-log, nohup.out, Python caches, notebook checkpoints, OS files, training outputs (work_dirs/), dataset files (.arrow, archives), scratch files (新建文本文档.txt)",
    },
    Rule {
        id: "zoo.oversized",
        severity: Severity::Error,
        description: "no file is over 100 MiB (GitHub refuses the push; datasets and weights belong on a download link)",
    },
    Rule {
        id: "zoo.adaptation-marker",
        severity: Severity::Warning,
        description: "a source file under a third-party copyright notice that was changed for SDAA (it uses torch_sdaa, sdaa or tcap_dllogger) carries the PR rules' marker `Adapted to tecorigin hardware`",
    },
];

/// What the rules of one model directory share: the directory (absolute), its listing, the
/// model README (README.md, else the README-like file it has), the shell scripts.
pub(crate) struct Context {
    /// The directory, canonical (what the rules read).
    pub dir: PathBuf,
    /// The directory as the user gave it (what findings name).
    pub given: PathBuf,
    pub tree: files::Tree,
    pub readme: Option<(PathBuf, String)>,
    pub scripts: Vec<(PathBuf, String)>,
}

impl Context {
    fn load(given: &Path) -> Context {
        let dir = std::fs::canonicalize(given).unwrap_or_else(|_| given.to_path_buf());
        let tree = files::Tree::walk(&dir);
        let readme = readme_of(&dir, &tree).and_then(|rel| {
            let p = dir.join(rel);
            files::read_text(&p).map(|t| (p, t))
        });
        let mut scripts = Vec::new();
        for e in tree.files() {
            let depth = e.rel.components().count();
            let parent = e
                .rel
                .parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().trim().to_string())
                .unwrap_or_default();
            let top_or_run = depth == 1 || (depth == 2 && parent.starts_with("run_script"));
            let name = e.name();
            if top_or_run && (name.ends_with(".sh") || name == "run") {
                let p = dir.join(&e.rel);
                if let Some(t) = files::read_text(&p) {
                    scripts.push((p, t));
                }
            }
        }
        Context {
            dir,
            given: given.to_path_buf(),
            tree,
            readme,
            scripts,
        }
    }

    /// `path` relative to the model directory, for messages.
    pub fn rel<'a>(&self, path: &'a Path) -> &'a Path {
        path.strip_prefix(&self.dir).unwrap_or(path)
    }

    /// `path` (under the canonical directory) as under the directory the user gave.
    pub fn shown(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.dir) {
            Ok(rel) if rel.as_os_str().is_empty() => self.given.clone(),
            Ok(rel) => self.given.join(rel),
            Err(_) => path.to_path_buf(),
        }
    }

    /// A finding about `path`, named as under the directory the user gave.
    pub fn finding(
        &self,
        path: &Path,
        line: Option<usize>,
        rule: &'static str,
        message: String,
    ) -> Finding {
        Finding {
            path: self.shown(path),
            line,
            rule,
            message,
        }
    }
}

/// The model README: `README.md`, else a README-like top-level file (`readme`, `README.MD`,
/// `readme.md`, ` README.md`) — zoo.misspelt-name reports the spelling.
fn readme_of(dir: &Path, tree: &files::Tree) -> Option<PathBuf> {
    if dir.join("README.md").is_file() {
        return Some(PathBuf::from("README.md"));
    }
    tree.files()
        .filter(|e| e.rel.components().count() == 1)
        .find(|e| {
            let n = e.name().trim().to_lowercase();
            n == "readme.md" || n == "readme"
        })
        .map(|e| e.rel.clone())
}

/// Every cross-file rule on one model directory; returns the log pairs it compared.
pub(crate) fn check_model_dir(dir: &Path, out: &mut Vec<Finding>) -> Vec<LossPair> {
    let ctx = Context::load(dir);
    let readme = ctx.readme.as_ref().map(|(p, t)| (p.as_path(), t.as_str()));
    let cmds = commands::collect(&ctx.dir, readme, &ctx.scripts);
    imports::check(&ctx, out);
    paths::check(&ctx, &cmds, out);
    cards::check(&ctx, &cmds, out);
    requirements::check(&ctx, out);
    constant::check(&ctx, out);
    let mut pairs = logs::check(&ctx, &cmds, out);
    for p in &mut pairs {
        p.source = match &p.source {
            PairSource::Logs { cuda, sdaa } => PairSource::Logs {
                cuda: ctx.shown(cuda),
                sdaa: ctx.shown(sdaa),
            },
            PairSource::Combined { file } => PairSource::Combined {
                file: ctx.shown(file),
            },
        };
    }
    zoo::check_dir(&ctx, out);
    pairs
}

/// The zoo-wide rules over the model directories `--all` found (near-duplicate names).
pub(crate) fn check_zoo(reports: &mut [DirReport]) {
    zoo::near_duplicates(reports);
}
