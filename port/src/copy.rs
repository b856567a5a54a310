//! The port's starting point: a copy of the project (its files, symlinks as symlinks, permission
//! bits kept), without what a migration never reads — VCS metadata, caches, virtual
//! environments ([`migrate::skip_dir`]).

use std::path::{Path, PathBuf};

use crate::PortError;

/// What the copy left out besides the skipped directories: FIFOs, sockets and devices (never
/// read: opening a FIFO would block).
#[derive(Debug, Default)]
pub struct Copied {
    pub files: usize,
    pub not_copied: Vec<(PathBuf, &'static str)>,
}

/// Copies `src`'s tree into `dst` (which exists and is empty).
pub fn copy_tree(src: &Path, dst: &Path) -> Result<Copied, PortError> {
    let mut copied = Copied::default();
    let walk = walkdir::WalkDir::new(src)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !migrate::skip_dir(e));
    for entry in walk {
        let entry = entry.map_err(|e| PortError::Copy {
            path: e
                .path()
                .map_or_else(|| src.to_path_buf(), Path::to_path_buf),
            message: e.to_string(),
        })?;
        let rel = entry.path().strip_prefix(src).unwrap_or(entry.path());
        if rel.as_os_str().is_empty() {
            continue;
        }
        let to = dst.join(rel);
        let io = |e: std::io::Error| PortError::Copy {
            path: entry.path().to_path_buf(),
            message: e.to_string(),
        };
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir(&to).map_err(io)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).map_err(io)?;
            std::os::unix::fs::symlink(target, &to).map_err(io)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &to).map_err(io)?;
            copied.files += 1;
        } else {
            copied.not_copied.push((
                rel.to_path_buf(),
                "not a regular file (a FIFO, socket or device)",
            ));
        }
    }
    Ok(copied)
}
