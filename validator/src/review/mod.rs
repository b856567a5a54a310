//! What a careful reviewer checks across the files of a model directory, and across the zoo
//! (`modelzoo validate`, on by default in the command; `Validator::with_review`): local imports
//! that resolve to nothing, paths that commands name and that do not exist, logs that are not
//! what their names say, quoted precision figures the shipped logs do not give, claims about
//! cards the command contradicts, framework pins and local wheels in any requirements file,
//! comparison scripts that print constants, results whose own verdict is fail, Dockerfiles
//! that cannot build what they promise — and, over a tree, near-duplicate model names, misspelt
//! standard names, committed junk and run outputs, oversized files, shebangs below a header
//! and adapted files without the "Adapted to tecorigin hardware" marker.
//!
//! Every rule reads with bounds ([`files`]): text files up to 4 MiB, logs streamed, a model
//! directory's listing capped, no symlink followed.

mod argparse;
mod cards;
mod case_params;
mod category;
mod commands;
mod constant;
mod docker;
mod files;
mod imports;
mod logs;
mod paths;
pub mod report;
mod requirements;
mod zoo;

use std::path::{Path, PathBuf};

use crate::finding::{DirReport, Finding};

pub use crate::finding::{LossPair, PairSource};
pub use crate::rules::REVIEW_RULES as RULES;
pub(crate) use logs::is_device_log;

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
            } else if top_or_run && name.ends_with(".py") {
                // The commands a run script builds in string literals (`os.system("torchrun
                // …")`) are checked as test.sh's are.
                let p = dir.join(&e.rel);
                if let Some(t) = files::read_text(&p).and_then(|t| commands::literal_commands(&t)) {
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
    docker::check(&ctx, out);
    category::check(&ctx, out);
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

/// The review's rule on a ModelZoo case file (args.case-params): every case's params against
/// its run file's own argparse parser. `file` is named in the findings as given.
pub(crate) fn check_case_file(cases: &model_config::ZooCases, file: &Path, out: &mut Vec<Finding>) {
    case_params::check(cases, file, out);
}

/// The zoo-wide rules over the model directories `--all` found (near-duplicate names).
pub(crate) fn check_zoo(reports: &mut [DirReport]) {
    zoo::near_duplicates(reports);
}
