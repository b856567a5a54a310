//! paths.command, paths.cd, paths.link and commands.consistent: the files commands and links
//! name exist, the README `cd`s into this model, test.sh trains what the README says.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use super::commands::{Cmd, Commands, Cwd, Source};
use super::files::normalise;
use super::Context;
use crate::finding::Finding;
use crate::markdown;

/// Options whose value is a file the command reads.
const FILE_OPTIONS: &[&str] = &[
    "--config",
    "--cfg",
    "--config-file",
    "--config_file",
    "--cfg_file",
    "--cfg-file",
    "--cuda-log",
    "--cuda_log",
];

/// Extensions of positional words that name a file the command reads.
const FILE_EXTS: &[&str] = &[".py", ".yaml", ".yml", ".json", ".cfg", ".sh", ".toml"];

pub(super) fn check(ctx: &Context, cmds: &Commands, out: &mut Vec<Finding>) {
    if let Some((readme, _)) = &ctx.readme {
        for (line, named, expected) in &cmds.wrong_cd {
            out.push(ctx.finding(
                readme,
                Some(*line),
                "paths.cd",
                format!(
                    "`cd {named}` is not this model's directory (that is <ModelZoo_path>/{expected}; paths are case-sensitive) — a reader following the README ends up elsewhere or nowhere: fix the path"
                ),
            ));
        }
    }
    let mut seen: Vec<(PathBuf, usize, String)> = Vec::new();
    for cmd in &cmds.all {
        if let Some(script) = bare_script(cmd) {
            out.push(ctx.finding(
                &cmd.file,
                Some(cmd.line),
                "paths.command",
                format!(
                    "runs `{script}` with no `python` in front: a shell looks the name up on PATH, so the command cannot run as written — write `python {script} …`"
                ),
            ));
        }
        for (word, what) in read_files(cmd) {
            if let Some(missing) = missing_file(ctx, cmd, &word) {
                let key = (cmd.file.clone(), cmd.line, word.clone());
                if seen.contains(&key) {
                    continue;
                }
                seen.push(key);
                // A path the script built from `$script_path` is shown as the model's.
                let shown = Path::new(&word)
                    .strip_prefix(&ctx.dir)
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|_| word.clone());
                out.push(ctx.finding(
                    &cmd.file,
                    Some(cmd.line),
                    "paths.command",
                    format!(
                        "{what} `{shown}` does not exist ({missing}) — the command cannot run as written: add the file or fix the name"
                    ),
                ));
            }
        }
    }
    check_links(ctx, out);
    check_consistent(ctx, cmds, out);
}

/// The files a command reads, each with what it is for the message.
fn read_files(cmd: &Cmd) -> Vec<(String, &'static str)> {
    let mut files = Vec::new();
    let words = &cmd.words;
    let program = cmd.program();
    let bare_script = bare_script(cmd);
    if cmd.is_python() || bare_script.is_some() {
        let Some((at, script)) = cmd.script().or(bare_script.map(|w| (0, w))) else {
            return files;
        };
        files.push((script.to_string(), "the script it runs,"));
        let mut i = at + 1;
        while i < words.len() {
            let w = &words[i];
            if FILE_OPTIONS.contains(&w.as_str()) || (w == "-c" && i > at) {
                if let Some(v) = words.get(i + 1) {
                    files.push((v.clone(), "the file it reads,"));
                }
                i += 2;
                continue;
            }
            if let Some((name, v)) = w.split_once('=') {
                if FILE_OPTIONS.contains(&name) {
                    files.push((v.to_string(), "the file it reads,"));
                }
            } else if !w.starts_with('-') && FILE_EXTS.iter().any(|e| w.ends_with(e)) {
                // A word right after an option that takes a value is that value (an output
                // directory, a name): only a bare positional counts.
                let prev = &words[i - 1];
                if i == at + 1 || !prev.starts_with('-') || prev.contains('=') {
                    files.push((w.clone(), "the file it reads,"));
                }
            }
            i += 1;
        }
    } else if program == "bash" || program == "sh" || program == "source" || program == "." {
        if let Some(w) = words.get(1).filter(|w| !w.starts_with('-')) {
            files.push((w.clone(), "the script it runs,"));
        }
    } else if program.ends_with(".sh") && words[0].starts_with("./") {
        files.push((words[0].clone(), "the script it runs,"));
    } else if program == "pip" || program == "pip3" || program == "mim" {
        for (i, w) in words.iter().enumerate() {
            if w == "-r" || w == "--requirement" {
                if let Some(v) = words.get(i + 1) {
                    files.push((v.clone(), "the requirements file it installs,"));
                }
            }
            // `pip install -e .` / `mim install -e .`: the directory must be a package.
            if w == "-e" || w == "--editable" {
                if let Some(v) = words.get(i + 1).filter(|v| is_local_dir(v)) {
                    let setup = match v.trim_end_matches('/') {
                        "." | "" => "setup.py".to_string(),
                        d => format!("{d}/setup.py"),
                    };
                    files.push((
                        setup,
                        "the setup.py (or pyproject.toml) its editable install (`-e`) builds,",
                    ));
                }
            }
        }
    }
    files
}

/// A word that names a local directory (not a URL, `git+…` or a package name with a version).
fn is_local_dir(word: &str) -> bool {
    !word.contains("://")
        && !word.starts_with("git+")
        && !word.contains(['=', '<', '>', '@'])
        && (word == "." || word.starts_with("./") || word.starts_with("../") || word.ends_with('/'))
}

/// A command that names a Python script as its program with no `python` and no path
/// (`run_MaskFormer.py --config x`): a shell looks the name up on PATH and does not find it.
pub(super) fn bare_script(cmd: &Cmd) -> Option<&str> {
    let first = cmd.words.first()?;
    (first.ends_with(".py") && !first.contains('/') && !first.contains('=')).then_some(first)
}

/// Why `word`, read by `cmd`, is missing (where it was looked for); `None` when it exists or
/// cannot be judged (a variable, an absolute path outside the directory, an unknown cwd, a
/// file the same script wrote first).
fn missing_file(ctx: &Context, cmd: &Cmd, word: &str) -> Option<String> {
    if word.is_empty()
        || word.contains(['$', '<', '>', '*', '?', '{', '}', '~', '`', '(', ')'])
        || word.contains("://")
        || word == "."
    {
        return None;
    }
    let base_name = word.rsplit('/').next().unwrap_or(word);
    if cmd
        .produced_before
        .iter()
        .any(|p| p == base_name || p == word)
    {
        return None;
    }
    let rel_word: PathBuf = if Path::new(word).is_absolute() {
        Path::new(word).strip_prefix(&ctx.dir).ok()?.to_path_buf()
    } else {
        PathBuf::from(word)
    };
    let candidates: Vec<PathBuf> = if Path::new(word).is_absolute() {
        vec![PathBuf::new()]
    } else {
        match &cmd.cwd {
            Cwd::Exact(c) => vec![c.clone()],
            Cwd::Either(cs) => cs.clone(),
            Cwd::Unknown => return None,
        }
    };
    let mut looked = Vec::new();
    for c in &candidates {
        let joined = if Path::new(word).is_absolute() {
            Some(rel_word.clone())
        } else {
            normalise(&c.join(&rel_word))
        };
        // Out of the model directory: not ours to judge.
        let rel = joined?;
        // The root requirements.txt missing is layout.requirements' finding.
        if rel.as_os_str() == "requirements.txt" {
            return None;
        }
        if ctx.dir.join(&rel).exists() {
            return None;
        }
        // A package may be built from pyproject.toml instead of setup.py.
        if rel.file_name().is_some_and(|n| n == "setup.py")
            && ctx.dir.join(rel.with_file_name("pyproject.toml")).exists()
        {
            return None;
        }
        looked.push(if c.as_os_str().is_empty() {
            "looked for in the model directory".to_string()
        } else {
            format!("looked for in {}/", c.display())
        });
    }
    Some(looked.join(", "))
}

/// Relative links and images of the model README that point to nothing.
fn check_links(ctx: &Context, out: &mut Vec<Finding>) {
    let Some((readme, text)) = &ctx.readme else {
        return;
    };
    static LINK: OnceLock<Regex> = OnceLock::new();
    let re = LINK.get_or_init(|| {
        Regex::new(r#"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|<img[^>]*\bsrc\s*=\s*["']([^"']+)["']"#)
            .expect("valid regex")
    });
    let base = readme
        .parent()
        .and_then(|p| p.strip_prefix(&ctx.dir).ok())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    for l in markdown::scan(text) {
        if l.code {
            continue;
        }
        for c in re.captures_iter(&l.text) {
            let Some(target) = c.get(1).or_else(|| c.get(2)).map(|m| m.as_str()) else {
                continue;
            };
            if target.contains("://")
                || target.starts_with('#')
                || target.starts_with("mailto:")
                || target.starts_with("data:")
                || target.starts_with('/')
                || target.contains(['<', '{', '$'])
            {
                continue;
            }
            let path = target.split(['#', '?']).next().unwrap_or("");
            let path = percent_decode(path);
            if path.is_empty() {
                continue;
            }
            let Some(rel) = normalise(&base.join(&path)) else {
                continue;
            };
            if ctx.dir.join(&rel).exists() {
                continue;
            }
            out.push(ctx.finding(
                readme,
                Some(l.no),
                "paths.link",
                format!(
                    "links to `{target}`, which is not in the directory ({}) — add the file or fix the link",
                    rel.display()
                ),
            ));
        }
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A training script: not a comparison, plotting or setup script.
fn is_training_script(script: &str) -> bool {
    let name = script.rsplit('/').next().unwrap_or(script).to_lowercase();
    // A name behind an unknown variable is not known.
    !(script.contains('$')
        || name.contains("loss")
        || name.contains("plot")
        || name.contains("compare")
        || name.contains("calibrat")
        || name == "setup.py")
}

fn base(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

/// commands.consistent: test.sh trains with the README's script and config.
fn check_consistent(ctx: &Context, cmds: &Commands, out: &mut Vec<Finding>) {
    let training = |source: Source| -> Vec<&Cmd> {
        cmds.all
            .iter()
            .filter(|c| c.source == source)
            .filter(|c| c.script().is_some_and(|(_, s)| is_training_script(s)))
            .collect()
    };
    let readme = training(Source::Readme);
    let Some(first_readme) = readme.first() else {
        return;
    };
    let scripts: Vec<&Cmd> = training(Source::Script)
        .into_iter()
        .filter(|c| {
            c.file
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains("test"))
        })
        .collect();
    let readme_scripts: Vec<&str> = readme
        .iter()
        .filter_map(|c| c.script().map(|(_, s)| base(s)))
        .collect();
    let readme_configs: Vec<&str> = readme.iter().filter_map(|c| c.config().map(base)).collect();
    for cmd in scripts {
        let Some((_, script)) = cmd.script() else {
            continue;
        };
        let where_readme = format!(
            "{}:{}",
            ctx.rel(&first_readme.file).display(),
            first_readme.line
        );
        if !readme_scripts.contains(&base(script)) {
            out.push(ctx.finding(
                &cmd.file,
                Some(cmd.line),
                "commands.consistent",
                format!(
                    "trains with `{}` but the README's training command runs `{}` ({where_readme}) — one of them is not this model's: make them the same",
                    base(script),
                    readme_scripts.join("`, `")
                ),
            ));
            continue;
        }
        if let Some(cfg) = cmd.config() {
            if !readme_configs.is_empty() && !readme_configs.contains(&base(cfg)) {
                out.push(ctx.finding(
                    &cmd.file,
                    Some(cmd.line),
                    "commands.consistent",
                    format!(
                        "trains with config `{}` but the README's command uses `{}` ({where_readme}) — the logs would not be from the documented run: use the same config",
                        base(cfg),
                        readme_configs.join("`, `")
                    ),
                ));
            }
        }
    }
}
