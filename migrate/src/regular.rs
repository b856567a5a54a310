//! Reading only regular files, and which directories a walk leaves out: what the walker
//! ([`crate::tree`]), the record ([`crate::record`]) and the custom-op inventory
//! ([`crate::custom_ops`]) all need, kept below them so none imports another for it.

use std::path::Path;

/// What a directory entry is when it is not a regular file (so it is never opened: reading a
/// FIFO blocks until something writes to it, a device may never end), or `None`.
pub(crate) fn not_regular(ft: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_file() || ft.is_dir() {
        None
    } else if ft.is_symlink() {
        Some("a symbolic link")
    } else if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_socket() {
        Some("a socket")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else {
        Some("not a regular file")
    }
}

/// Reads `path` only if it is a regular file, without ever blocking: it is opened
/// non-blocking and without following a link, and checked after opening, so a FIFO, socket or
/// device that took the file's place after the walk is refused with what it is, not read.
pub(crate) fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    if let Some(what) = not_regular(meta.file_type()) {
        return Err(std::io::Error::other(format!(
            "{what}, not a regular file: not read; put the regular file back and run the \
             migration again"
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
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

/// Whether a walk of a project leaves this directory out: VCS metadata, caches, virtual
/// environments (what a migration never reads, and `modelzoo port` never copies).
pub fn skip_dir(entry: &walkdir::DirEntry) -> bool {
    if entry.depth() == 0 || !entry.file_type().is_dir() {
        return false;
    }
    let name = entry.file_name().to_string_lossy();
    SKIP_DIRS.contains(&name.as_ref())
        || name.ends_with(".egg-info")
        // Any virtualenv, whatever its name.
        || entry.path().join("pyvenv.cfg").is_file()
}
