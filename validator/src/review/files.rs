//! Bounded reading for the review rules: a model directory's file list (capped, no symlinks
//! followed), text files read up to a cap, logs streamed line by line with long lines cut.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Most entries listed per model directory; beyond it the listing stops (and says so).
pub(crate) const MAX_ENTRIES: usize = 100_000;
/// Most bytes of a text file (README, script, requirements) the rules read.
pub(crate) const MAX_TEXT: u64 = crate::rules::MAX_CHECKED_BYTES;
/// Most bytes of a log the rules stream.
pub(crate) const MAX_LOG: u64 = 1 << 30;
/// Longest log line kept whole; the rest of a longer line is skipped.
pub(crate) const MAX_LINE: usize = 64 << 10;

/// One entry under a model directory.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Path relative to the model directory.
    pub rel: PathBuf,
    pub is_dir: bool,
    /// A regular file (a symlink, FIFO or socket is neither file nor directory here).
    pub is_file: bool,
    pub len: u64,
}

impl Entry {
    /// The last component, as text.
    pub fn name(&self) -> String {
        self.rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// What a model directory holds: every file and directory (`.git` skipped, symlinks listed but
/// not followed), sorted by path.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    pub entries: Vec<Entry>,
    /// The listing stopped at [`MAX_ENTRIES`].
    pub truncated: bool,
}

impl Tree {
    pub fn walk(dir: &Path) -> Tree {
        let mut tree = Tree::default();
        let walk = walkdir::WalkDir::new(dir)
            .follow_links(false)
            .sort_by_file_name()
            .min_depth(1)
            .into_iter()
            .filter_entry(|e| e.file_name() != ".git");
        for entry in walk.flatten() {
            if tree.entries.len() >= MAX_ENTRIES {
                tree.truncated = true;
                break;
            }
            let Ok(rel) = entry.path().strip_prefix(dir) else {
                continue;
            };
            let ft = entry.file_type();
            let len = if ft.is_file() {
                entry.metadata().map(|m| m.len()).unwrap_or(0)
            } else {
                0
            };
            tree.entries.push(Entry {
                rel: rel.to_path_buf(),
                is_dir: ft.is_dir(),
                is_file: ft.is_file(),
                len,
            });
        }
        tree
    }

    /// Regular files only.
    pub fn files(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.is_file)
    }
}

/// The text of a regular file, at most [`MAX_TEXT`] bytes of it (invalid UTF-8 replaced);
/// `None` when it is missing, not a regular file or unreadable (the layout rules report those).
pub(crate) fn read_text(path: &Path) -> Option<String> {
    let file = model_config::files::open_regular(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_TEXT).read_to_end(&mut bytes).ok()?;
    Some(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Stream a log's lines (1-based number, bytes without the newline; a line longer than
/// [`MAX_LINE`] is cut there) until `f` returns false or [`MAX_LOG`] bytes are read.
pub(crate) fn for_each_line(
    path: &Path,
    mut f: impl FnMut(usize, &[u8]) -> bool,
) -> io::Result<()> {
    let file = model_config::files::open_regular(path)?;
    let mut r = file.take(MAX_LOG);
    let mut buf = vec![0u8; 64 << 10];
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    let mut no = 0usize;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                no += 1;
                if !f(no, &line) {
                    return Ok(());
                }
                line.clear();
                cut = false;
            } else if !cut {
                if line.len() < MAX_LINE {
                    line.push(b);
                } else {
                    cut = true;
                }
            }
        }
    }
    if !line.is_empty() {
        f(no + 1, &line);
    }
    Ok(())
}

/// Whether two regular files hold the same bytes (streamed, sizes compared first).
pub(crate) fn same_bytes(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (fs::metadata(a), fs::metadata(b)) else {
        return false;
    };
    if ma.len() != mb.len() || !ma.is_file() || !mb.is_file() {
        return false;
    }
    let (Ok(fa), Ok(fb)) = (
        model_config::files::open_regular(a),
        model_config::files::open_regular(b),
    ) else {
        return false;
    };
    let (mut ra, mut rb) = (fa.take(MAX_LOG), fb.take(MAX_LOG));
    let (mut xa, mut xb) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    loop {
        let Ok(na) = read_full(&mut ra, &mut xa) else {
            return false;
        };
        let Ok(nb) = read_full(&mut rb, &mut xb) else {
            return false;
        };
        if na != nb || xa[..na] != xb[..nb] {
            return false;
        }
        if na == 0 {
            return true;
        }
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// `a/./b/../c` → `a/c`, lexically; `None` when it climbs above its start.
pub(crate) fn normalise(p: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    Some(out)
}

/// 1-based line number of byte offset `at` in `text`.
pub(crate) fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
