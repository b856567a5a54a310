//! Walking a model directory, migrating each file in memory, and writing the result back.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::rules::{migrate_text, FileKind, Note};

/// Why a migration could not run or write.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("{}: not a directory — give the model directory to migrate", path.display())]
    NotADirectory { path: PathBuf },
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        /// Included in the message (not chained, so it is printed once).
        error: std::io::Error,
    },
    #[error("{}: refusing to write outside {}", path.display(), root.display())]
    OutsideRoot { path: PathBuf, root: PathBuf },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MigrateError + '_ {
    move |source| MigrateError::Io {
        path: path.to_path_buf(),
        error: source,
    }
}

/// One file the migration would change.
#[derive(Debug, Clone, Serialize)]
pub struct FileChange {
    /// Path relative to the migrated directory.
    pub path: PathBuf,
    #[serde(skip)]
    pub old: String,
    #[serde(skip)]
    pub new: String,
    pub rewrites: BTreeMap<&'static str, usize>,
    /// Unified diff `a/<path>` → `b/<path>`.
    #[serde(skip)]
    pub diff: String,
}

/// A finding the user must look at, located in a file.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Path relative to the migrated directory.
    pub path: PathBuf,
    pub line: usize,
    pub rule: &'static str,
    pub message: String,
}

/// A file that was not read, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// Everything a migration found: the changes (a dry run's diff), the rule counts, what
/// needs a person, and the files it skipped.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// The directory migrated.
    pub root: PathBuf,
    /// Python/shell/CUDA files read.
    pub files_scanned: usize,
    pub changes: Vec<FileChange>,
    /// Rewrites per rule over all files.
    pub rule_counts: BTreeMap<&'static str, usize>,
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
}

/// Directories never entered: VCS metadata, caches, virtual environments.
const SKIP_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".tox",
    ".nox",
    "node_modules",
    "site-packages",
    ".venv",
    "venv",
    ".eggs",
];

fn skip_dir(entry: &walkdir::DirEntry) -> bool {
    if entry.depth() == 0 || !entry.file_type().is_dir() {
        return false;
    }
    let name = entry.file_name().to_string_lossy();
    SKIP_DIRS.contains(&name.as_ref())
        || name.ends_with(".egg-info")
        // Any virtualenv, whatever its name.
        || entry.path().join("pyvenv.cfg").is_file()
}

/// Migrates every Python, shell and CUDA file under `root` in memory (a dry run).
/// Symlinks are not followed, so nothing outside `root` is read or written.
pub fn scan(root: &Path) -> Result<Report, MigrateError> {
    let meta = std::fs::metadata(root).map_err(io(root))?;
    if !meta.is_dir() {
        return Err(MigrateError::NotADirectory {
            path: root.to_path_buf(),
        });
    }
    let mut report = Report {
        root: root.to_path_buf(),
        ..Report::default()
    };
    // Walk first (sorted, so output order is stable), then migrate the files in parallel.
    let mut files: Vec<(PathBuf, PathBuf, FileKind)> = Vec::new();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !skip_dir(e));
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(err) => {
                let path = err.path().unwrap_or(root).to_path_buf();
                report.skipped.push(Skipped {
                    path: relative(root, &path),
                    reason: format!("cannot read: {err}"),
                });
                continue;
            }
        };
        if !entry.file_type().is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy();
        if let Some(kind) = FileKind::of(&name) {
            let rel = relative(root, entry.path());
            files.push((entry.into_path(), rel, kind));
        }
    }
    let results = parallel_map(&files, |(path, rel, kind)| migrate_file(path, rel, *kind));
    for result in results {
        match result {
            FileResult::Skipped(s) => report.skipped.push(s),
            FileResult::Done {
                rel,
                outcome,
                change,
            } => {
                report.files_scanned += 1;
                for Note {
                    line,
                    rule,
                    message,
                } in outcome.notes
                {
                    report.findings.push(Finding {
                        path: rel.clone(),
                        line,
                        rule,
                        message,
                    });
                }
                for (rule, n) in &outcome.rewrites {
                    *report.rule_counts.entry(rule).or_default() += n;
                }
                if let Some(change) = change {
                    report.changes.push(change);
                }
            }
        }
    }
    Ok(report)
}

enum FileResult {
    Skipped(Skipped),
    Done {
        rel: PathBuf,
        outcome: crate::rules::FileOutcome,
        change: Option<FileChange>,
    },
}

/// Reads and migrates one file, rendering its diff (the expensive part, so it runs here, in
/// parallel, rather than when printing).
fn migrate_file(path: &Path, rel: &Path, kind: FileKind) -> FileResult {
    let skipped = |reason: String| {
        FileResult::Skipped(Skipped {
            path: rel.to_path_buf(),
            reason,
        })
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(err) => return skipped(format!("cannot read: {err}")),
    };
    if bytes.contains(&0) {
        return skipped("binary (contains NUL bytes)".into());
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(err) => {
            return skipped(format!(
                "not UTF-8 (invalid byte at offset {}); convert it to UTF-8 and run again",
                err.utf8_error().valid_up_to()
            ))
        }
    };
    let mut outcome = migrate_text(&text, kind);
    outcome.notes.sort_by_key(|n| n.line);
    let change = if outcome.text != text {
        let shown = rel.display().to_string();
        let diff = similar::TextDiff::from_lines(&text, &outcome.text)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{shown}"), &format!("b/{shown}"))
            .to_string();
        Some(FileChange {
            path: rel.to_path_buf(),
            new: std::mem::take(&mut outcome.text),
            old: text,
            rewrites: outcome.rewrites.clone(),
            diff,
        })
    } else {
        None
    };
    FileResult::Done {
        rel: rel.to_path_buf(),
        outcome,
        change,
    }
}

/// `f` over `items` on every available core, results in input order.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(items.len().max(1));
    if threads <= 1 {
        return items.iter().map(&f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<Option<R>> = Vec::with_capacity(items.len());
    slots.resize_with(items.len(), || None);
    let slots = std::sync::Mutex::new(slots);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                if let Ok(mut all) = slots.lock() {
                    all[i] = Some(r);
                }
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

/// Writes the report's changes: each file atomically (temp file in the same directory,
/// fsync, rename), its permission bits kept. Files changed on disk since the scan are refused.
pub fn write(report: &Report) -> Result<usize, MigrateError> {
    let root = std::fs::canonicalize(&report.root).map_err(io(&report.root))?;
    for change in &report.changes {
        let path = report.root.join(&change.path);
        let real = std::fs::canonicalize(&path).map_err(io(&path))?;
        if !real.starts_with(&root) {
            return Err(MigrateError::OutsideRoot { path: real, root });
        }
        let current = std::fs::read(&real).map_err(io(&real))?;
        if current != change.old.as_bytes() {
            return Err(MigrateError::Io {
                path: real,
                error: std::io::Error::other(
                    "changed on disk since it was scanned; run the migration again",
                ),
            });
        }
        let meta = std::fs::metadata(&real).map_err(io(&real))?;
        let dir = real.parent().unwrap_or(&root);
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io(dir))?;
        tmp.write_all(change.new.as_bytes())
            .map_err(io(tmp.path()))?;
        tmp.as_file().sync_all().map_err(io(&real))?;
        std::fs::set_permissions(tmp.path(), meta.permissions()).map_err(io(&real))?;
        tmp.persist(&real).map_err(|e| MigrateError::Io {
            path: real.clone(),
            error: e.error,
        })?;
    }
    Ok(report.changes.len())
}

/// Writes a new file (mode 0644) or replaces one (mode kept) atomically: temp file in the
/// same directory, fsync, rename.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let permissions = std::fs::metadata(path)
        .map(|m| m.permissions())
        .unwrap_or_else(|_| std::fs::Permissions::from_mode(0o644));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    std::fs::set_permissions(tmp.path(), permissions)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}
