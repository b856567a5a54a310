//! Walking a model directory, migrating each file in memory, and writing the result back.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::regular::{not_regular, read_regular, skip_dir};
use crate::report::{display_path, quote_path, FileChange, Finding, Report, Skipped, WrittenFile};
use crate::rules::{migrate_text_in, Context, FileKind, Note};

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
    /// A `--write` stopped part way (a full disk, a read-only directory): says how far it got.
    #[error(
        "{}: cannot write it: {error}\n{written} of {total} files were rewritten before this{done}; \
         the other {} are unchanged (no file is half-written). {record}\n\
         Fix the cause (e.g. free disk space) and run the migration with --write again: the files \
         already rewritten need no more changes, so the re-run completes the rest.",
        display_path(path),
        .total - .written
    )]
    Interrupted {
        path: PathBuf,
        error: std::io::Error,
        written: usize,
        total: usize,
        /// ` (a.py, b.py)`, or empty.
        done: String,
        /// What became of MIGRATION.md.
        record: String,
    },
    #[error(
        "{}: exists and was not written by modelzoo migrate; rename it (the migration keeps its report there) and run again",
        path.display()
    )]
    RecordNotOurs { path: PathBuf },
    /// An output path that must not be written: checked before anything is.
    #[error("{}: cannot write the {what} there: {why}", display_path(path))]
    BadOutput {
        path: PathBuf,
        /// What would have been written there (`report`, `record`).
        what: &'static str,
        why: String,
    },
}

/// Checks an output path the user named (`--report`) before anything is written: it must be
/// a regular file or absent (in an existing directory) — never a directory, a FIFO (writing
/// one blocks), a socket, a device or a symbolic link (the atomic rename would replace the
/// link, not its target) — and, once `report` is known, never one of the files the migration
/// reads (the report would replace a source being migrated) nor `<DIR>/MIGRATION.md`.
pub fn check_output_path(path: &Path, report: Option<&Report>) -> Result<(), MigrateError> {
    let bad = |why: String| MigrateError::BadOutput {
        path: path.to_path_buf(),
        what: "report",
        why,
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(bad(format!("cannot look at it: {e}"))),
    };
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match &meta {
        Some(m) if m.is_dir() => {
            return Err(bad(
                "it is a directory; name a file (e.g. DIR/migration.md)".into(),
            ))
        }
        Some(m) if m.file_type().is_symlink() => {
            return Err(bad(
                "it is a symbolic link, which the atomic write would replace rather than write \
                 through; name the file it points to"
                    .into(),
            ))
        }
        Some(m) => {
            if let Some(what) = not_regular(m.file_type()) {
                return Err(bad(format!(
                    "it is {what}, not a regular file; name a regular file or a new one"
                )));
            }
        }
        None if !parent.is_dir() => {
            return Err(bad(format!(
                "its directory {} does not exist; create it or name another path",
                display_path(parent)
            )))
        }
        None => {}
    }
    let Some(report) = report else {
        return Ok(());
    };
    let root = std::fs::canonicalize(&report.root).map_err(io(&report.root))?;
    let name = path.file_name().unwrap_or_default();
    if let Ok(dir) = std::fs::canonicalize(parent) {
        if dir == root && name == crate::record::RECORD_FILE {
            return Err(bad(format!(
                "it is the migration's own record, {}; name another file",
                display_path(&report.root.join(crate::record::RECORD_FILE))
            )));
        }
    }
    if let Some(m) = &meta {
        use std::os::unix::fs::MetadataExt;
        for rel in &report.inputs {
            let same = std::fs::symlink_metadata(report.root.join(rel))
                .is_ok_and(|i| i.dev() == m.dev() && i.ino() == m.ino());
            if same {
                return Err(bad(format!(
                    "it is {}, one of the files being migrated, which the report would replace; \
                     name a file that is not a source",
                    display_path(rel)
                )));
            }
        }
    }
    Ok(())
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MigrateError + '_ {
    move |source| MigrateError::Io {
        path: path.to_path_buf(),
        error: source,
    }
}

/// What a `--write` did.
#[derive(Debug, Clone)]
pub struct Written {
    /// Files rewritten.
    pub files: usize,
    /// Leftover temp files of interrupted runs removed.
    pub removed_temp: usize,
    /// The MIGRATION.md written.
    pub record: PathBuf,
    /// The report with its findings in the line numbers of the files as written.
    pub report: Report,
}

/// Prefix (and suffix `.tmp`) of this tool's temp files, so a later run can tell its own
/// leftovers (from a killed run) from anything else.
pub const TEMP_PREFIX: &str = ".modelzoo-migrate-";

fn is_our_temp(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) && name.ends_with(".tmp")
}

/// tempfile's errors carry the temp file's random name; the messages name the real file.
fn without_temp_path(e: std::io::Error) -> std::io::Error {
    let inner = e
        .get_ref()
        .and_then(|r| r.source())
        .and_then(|s| s.downcast_ref::<std::io::Error>());
    match inner {
        Some(inner) => match inner.raw_os_error() {
            Some(code) => std::io::Error::from_raw_os_error(code),
            None => std::io::Error::new(inner.kind(), inner.to_string()),
        },
        None => e,
    }
}

/// The `---`/`+++` file name of a diff header, as git writes it: quoted when needed, and with a
/// trailing tab when it holds a space so `git apply` knows where it ends.
fn diff_header_name(prefix: &str, path: &Path) -> String {
    let name = quote_path(prefix, path);
    if !name.starts_with('"') && name.contains(' ') {
        format!("{name}\t")
    } else {
        name
    }
}

/// Why a file the migration would read is skipped because of what it is.
fn not_regular_reason(what: &str) -> String {
    if what == "a symbolic link" {
        "a symbolic link: not followed, so nothing outside the directory is read; the file it \
         points to is migrated where it lies if that is inside the directory"
            .into()
    } else {
        format!(
            "{what}, not a regular file: not opened (reading one can block); replace it with the \
             regular file to migrate it"
        )
    }
}

/// Migrates every Python, shell and CUDA file under `root` in memory (a dry run).
/// Symlinks are not followed, so nothing outside `root` is read or written; an entry with a
/// name the migration reads that is not a regular file (a link, FIFO, socket, device) is listed
/// as skipped, never opened.
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
    // Where Triton Inference Server code lies: model repositories and `triton/` directories.
    let mut model_repos: Vec<PathBuf> = Vec::new();
    let mut triton_dirs: Vec<PathBuf> = Vec::new();
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
        let name = entry.file_name().to_string_lossy();
        if let Some(what) = not_regular(entry.file_type()) {
            if FileKind::of(&name).is_some() {
                report.skipped.push(Skipped {
                    path: relative(root, entry.path()),
                    reason: not_regular_reason(what),
                });
            }
            continue;
        }
        if entry.file_type().is_dir() && name == "triton" {
            triton_dirs.push(relative(root, entry.path()));
        }
        if !entry.file_type().is_file() {
            continue;
        }
        if name == "config.pbtxt" {
            if let Some(dir) = relative(root, entry.path()).parent() {
                model_repos.push(dir.to_path_buf());
            }
        }
        if is_our_temp(&name) {
            report.leftover_temp.push(relative(root, entry.path()));
            continue;
        }
        if let Some(kind) = FileKind::of(&name) {
            let rel = relative(root, entry.path());
            files.push((entry.into_path(), rel, kind));
        }
    }
    let contexts = triton_contexts(&files, &model_repos, &triton_dirs);
    let jobs: Vec<_> = files.iter().zip(&contexts).collect();
    let results = parallel_map(&jobs, |((path, rel, kind), ctx)| {
        migrate_file(path, rel, *kind, ctx)
    });
    report.inputs = files.iter().map(|(_, rel, _)| rel.clone()).collect();
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
                        recorded: false,
                    });
                }
                for (rule, n) in &outcome.rewrites {
                    *report.rule_counts.entry(rule).or_default() += n;
                }
                if let Some(change) = change {
                    report.changes.push(*change);
                }
            }
        }
    }
    // What an earlier --write recorded and this run's rules cannot see again (a rewrite left
    // nothing to re-detect) still needs a person.
    let record = crate::record::load(root);
    let scanned: HashSet<&Path> = files.iter().map(|(_, rel, _)| rel.as_path()).collect();
    let found: HashSet<(&Path, usize, &str, &str)> = report
        .findings
        .iter()
        .map(|f| (f.path.as_path(), f.line, f.rule, f.message.as_str()))
        .collect();
    crate::meter::add((report.findings.len() + record.findings.len()) as u64);
    let mut carried: Vec<Finding> = record
        .findings
        .into_iter()
        .filter(|r| scanned.contains(r.path.as_path()))
        .filter(|r| !found.contains(&(r.path.as_path(), r.line, r.rule, r.message.as_str())))
        .collect();
    carried.dedup_by(|a, b| {
        a.path == b.path && a.line == b.line && a.rule == b.rule && a.message == b.message
    });
    report.findings.extend(carried);
    report
        .findings
        .sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    report.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    report.written_before = record.written;
    report.custom_ops = crate::custom_ops::find(root);
    Ok(report)
}

enum FileResult {
    Skipped(Skipped),
    Done {
        rel: PathBuf,
        outcome: crate::rules::FileOutcome,
        change: Option<Box<FileChange>>,
    },
}

/// What the tree says about each file (see [`Context`]): whether it lies in a Triton model
/// repository (a directory holding `config.pbtxt`, and everything under it) or in a `triton/`
/// directory that is a Triton Inference Server deployment (one holding a model repository or a
/// Python file importing the server's packages, as NVIDIA DeepLearningExamples' `triton/`
/// does), and whether such a `triton/` directory is what `import triton` finds for it (at the
/// root, or beside the file).
fn triton_contexts(
    files: &[(PathBuf, PathBuf, FileKind)],
    model_repos: &[PathBuf],
    triton_dirs: &[PathBuf],
) -> Vec<Context> {
    let server_dirs: Vec<(&PathBuf, String)> = triton_dirs
        .iter()
        .filter_map(|dir| {
            if let Some(repo) = model_repos.iter().find(|r| r.starts_with(dir)) {
                return Some((
                    dir,
                    format!("`{}` holds a model repository", display_path(repo)),
                ));
            }
            files
                .iter()
                .filter(|(_, rel, kind)| *kind == FileKind::Python && rel.starts_with(dir))
                .find_map(|(path, rel, _)| {
                    let text = String::from_utf8(read_regular(path).ok()?).ok()?;
                    let (line, why) = crate::rules::triton_server_import(&text)?;
                    Some((dir, format!("{}:{line} {why}", display_path(rel))))
                })
        })
        .collect();
    files
        .iter()
        .map(|(_, rel, _)| {
            let parent = rel.parent().unwrap_or(Path::new(""));
            let triton_server = model_repos
                .iter()
                .find(|r| rel.starts_with(r))
                .map(|r| {
                    format!(
                        "in a Triton model repository: `{}`",
                        display_path(&r.join("config.pbtxt"))
                    )
                })
                .or_else(|| {
                    server_dirs
                        .iter()
                        .find(|(d, _)| rel.starts_with(d))
                        .map(|(d, why)| {
                            format!(
                                "under `{}/`, a Triton Inference Server deployment directory: {why}",
                                display_path(d)
                            )
                        })
                });
            let local_triton = server_dirs
                .iter()
                .any(|(d, _)| d.as_path() == Path::new("triton") || *d == &parent.join("triton"));
            Context {
                triton_server,
                local_triton,
            }
        })
        .collect()
}

/// Reads and migrates one file, rendering its diff (the expensive part, so it runs here, in
/// parallel, rather than when printing).
fn migrate_file(path: &Path, rel: &Path, kind: FileKind, ctx: &Context) -> FileResult {
    let skipped = |reason: String| {
        FileResult::Skipped(Skipped {
            path: rel.to_path_buf(),
            reason,
        })
    };
    let bytes = match read_regular(path) {
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
    let mut outcome = migrate_text_in(&text, kind, ctx);
    outcome.notes.sort_by_key(|n| n.line);
    let change = if outcome.text != text {
        let old: Vec<&str> = text.split_inclusive('\n').collect();
        let new: Vec<&str> = outcome.text.split_inclusive('\n').collect();
        let ops = crate::diff::line_ops(&old, &new, &outcome.origin);
        let diff = crate::diff::unified(
            &old,
            &new,
            &ops,
            &diff_header_name("a/", rel),
            &diff_header_name("b/", rel),
        );
        let (line_map, changed_lines) = crate::diff::line_map(&ops, new.len());
        drop((old, new));
        Some(Box::new(FileChange {
            path: rel.to_path_buf(),
            new: std::mem::take(&mut outcome.text),
            old: text,
            rewrites: outcome.rewrites.clone(),
            diff,
            line_map,
            changed_lines,
        }))
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

/// Writes the report's changes and `MIGRATION.md` (see [`crate::record`]): each file atomically
/// (temp file in the same directory, fsync, rename), its permission bits kept. Leftover temp
/// files of an interrupted run are removed first. Nothing is written when a file changed on
/// disk since the scan or MIGRATION.md is someone else's; a write that fails part way (a full
/// disk) says how many files were rewritten, records them, and a re-run completes the rest.
pub fn write(report: &Report) -> Result<Written, MigrateError> {
    let root = std::fs::canonicalize(&report.root).map_err(io(&report.root))?;
    let record_path = report.root.join(crate::record::RECORD_FILE);
    if let Some(what) = std::fs::symlink_metadata(&record_path).ok().and_then(|m| {
        if m.is_dir() {
            Some("a directory")
        } else {
            not_regular(m.file_type())
        }
    }) {
        return Err(MigrateError::BadOutput {
            path: record_path,
            what: "record",
            why: format!(
                "it is {what}, not a regular file; move it away (the migration keeps its record \
                 there) and run again"
            ),
        });
    }
    if !crate::record::ours_or_absent(&record_path) {
        return Err(MigrateError::RecordNotOurs { path: record_path });
    }
    // Check every file before writing any, so a refusal leaves the tree as it was.
    let mut targets = Vec::with_capacity(report.changes.len());
    for change in &report.changes {
        let path = report.root.join(&change.path);
        let real = std::fs::canonicalize(&path).map_err(io(&path))?;
        if !real.starts_with(&root) {
            return Err(MigrateError::OutsideRoot { path: real, root });
        }
        let current = read_regular(&real).map_err(io(&real))?;
        if current != change.old.as_bytes() {
            return Err(MigrateError::Io {
                path: real,
                error: std::io::Error::other(
                    "changed on disk since it was scanned; run the migration again",
                ),
            });
        }
        targets.push(real);
    }
    let mut removed_temp = 0;
    for rel in &report.leftover_temp {
        if std::fs::remove_file(report.root.join(rel)).is_ok() {
            removed_temp += 1;
        }
    }
    for (i, (change, real)) in report.changes.iter().zip(&targets).enumerate() {
        if let Err(error) = write_atomic(real, change.new.as_bytes()) {
            let after = after_write(report, i);
            let record = match save_record(&after, &report.changes[..i]) {
                Ok(()) => format!(
                    "{} records the files rewritten so far and what needs a person.",
                    crate::record::RECORD_FILE
                ),
                Err(e) => format!(
                    "{} could not be written either ({e}).",
                    crate::record::RECORD_FILE
                ),
            };
            let names: Vec<String> = report.changes[..i]
                .iter()
                .take(5)
                .map(|c| display_path(&c.path))
                .collect();
            let done = match i {
                0 => String::new(),
                1..=5 => format!(" ({})", names.join(", ")),
                _ => format!(" ({}, ...)", names.join(", ")),
            };
            return Err(MigrateError::Interrupted {
                path: report.root.join(&change.path),
                error,
                written: i,
                total: report.changes.len(),
                done,
                record,
            });
        }
    }
    let after = after_write(report, report.changes.len());
    save_record(&after, &report.changes).map_err(io(&record_path))?;
    Ok(Written {
        files: report.changes.len(),
        removed_temp,
        record: record_path,
        report: after,
    })
}

/// The report once its first `n` changes are written: their findings move to the written
/// files' line numbers.
fn after_write(report: &Report, n: usize) -> Report {
    let mut after = report.clone();
    let written: HashMap<&Path, &FileChange> = report.changes[..n]
        .iter()
        .map(|c| (c.path.as_path(), c))
        .collect();
    for f in &mut after.findings {
        if let Some(c) = written.get(f.path.as_path()) {
            if let Some(&new) = c.line_map.get(f.line.saturating_sub(1)) {
                f.line = new;
            }
        }
    }
    after.changes.truncate(n);
    after.leftover_temp.clear();
    after
}

/// MIGRATION.md for the report after a write of `written` (plus earlier runs' files).
fn save_record(after: &Report, written: &[FileChange]) -> std::io::Result<()> {
    let mut files: Vec<WrittenFile> = written
        .iter()
        .map(|c| WrittenFile {
            path: c.path.clone(),
            lines: c.changed_lines.clone(),
            rewrites: c
                .rewrites
                .iter()
                .map(|(r, n)| format!("{r}×{n}"))
                .collect::<Vec<_>>()
                .join(", "),
        })
        .collect();
    let this_run: HashSet<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    for earlier in &after.written_before {
        if !this_run.contains(&earlier.path) {
            files.push(earlier.clone());
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let text = crate::record::render(after, &files);
    write_atomic(
        &after.root.join(crate::record::RECORD_FILE),
        text.as_bytes(),
    )
}

/// Writes `bytes` to `path` atomically (see [`modelzoo_support::write_atomic`]) through one
/// of our temp files, so a killed run's leftover is recognised (see [`TEMP_PREFIX`]).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    modelzoo_support::AtomicFile::with_temp_name(path, TEMP_PREFIX, ".tmp")
        .map_err(without_temp_path)?
        .write_and_commit(bytes)
}

fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}
