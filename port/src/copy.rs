//! The port's copies of a project (its files, symlinks as symlinks, permission bits kept),
//! without what a migration never reads — VCS metadata, caches, virtual environments
//! ([`migrate::skip_dir`]) — nor an earlier port's own files (`.modelzoo-port/`, and the
//! `PORT.md` / `port.json` it wrote at the top). A symlink that points inside one of the trees
//! it was copied from is re-pointed into the copy, so a run never writes through it into the
//! user's project; one that points elsewhere is kept as it is and listed.

use std::path::{Component, Path, PathBuf};

use crate::PortError;

/// What a copy did besides copying files.
#[derive(Debug, Default)]
pub struct Copied {
    pub files: usize,
    /// Left out, with why: FIFOs, sockets and devices (never read: opening a FIFO would
    /// block), an earlier port's own files.
    pub not_copied: Vec<(PathBuf, &'static str)>,
    /// Symlinks kept pointing outside the project (relative path in the copy, target).
    pub links_outside: Vec<(PathBuf, PathBuf)>,
    /// Symlinks into the project re-pointed into the copy (relative path, old target).
    pub links_repointed: Vec<(PathBuf, PathBuf)>,
}

/// Copies `src`'s tree into `dst` (which exists and is empty). A symlink whose target lies
/// inside `src` or inside one of `also_inside` (trees `src` was itself copied from: a link
/// there means the same place in `src`) is re-pointed to the same place in `dst`.
pub fn copy_tree(src: &Path, dst: &Path, also_inside: &[&Path]) -> Result<Copied, PortError> {
    let mut copied = Copied::default();
    let walk = walkdir::WalkDir::new(src)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !migrate::skip_dir(e) && !earlier_port_file(e));
    let mut dir_modes: Vec<(PathBuf, std::fs::Permissions)> = Vec::new();
    let mut roots: Vec<&Path> = vec![src];
    roots.extend(also_inside.iter().copied());
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
            let meta = entry.metadata().map_err(|e| PortError::Copy {
                path: entry.path().to_path_buf(),
                message: e.to_string(),
            })?;
            // Set once its contents are in: a read-only directory could not be filled.
            dir_modes.push((to, meta.permissions()));
        } else if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).map_err(io)?;
            let link_dir = entry.path().parent().unwrap_or(src);
            let resolved = normalize(&link_dir.join(&target));
            let inside = roots
                .iter()
                .find_map(|root| resolved.strip_prefix(root).ok().map(Path::to_path_buf));
            match inside {
                Some(in_tree) => {
                    let new_target = if target.is_absolute() {
                        dst.join(&in_tree)
                    } else {
                        relative_from(rel.parent().unwrap_or(Path::new("")), &in_tree)
                    };
                    std::os::unix::fs::symlink(&new_target, &to).map_err(io)?;
                    if new_target != target {
                        copied.links_repointed.push((rel.to_path_buf(), target));
                    }
                }
                None => {
                    std::os::unix::fs::symlink(&target, &to).map_err(io)?;
                    copied.links_outside.push((rel.to_path_buf(), target));
                }
            }
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
    for (dir, mode) in dir_modes.into_iter().rev() {
        std::fs::set_permissions(&dir, mode).map_err(|e| PortError::Copy {
            path: dir.clone(),
            message: e.to_string(),
        })?;
    }
    for name in earlier_port_files(src) {
        copied.not_copied.push((
            PathBuf::from(name),
            "an earlier port's own file (a port's work directory and report are always made fresh)",
        ));
    }
    Ok(copied)
}

/// Whether `entry` is an earlier port's own file: its work directory at any depth, or the
/// report it wrote at the top of the tree (recognised by its content).
fn earlier_port_file(entry: &walkdir::DirEntry) -> bool {
    let name = entry.file_name();
    if name == crate::WORK_DIR && entry.depth() > 0 {
        return true;
    }
    entry.depth() == 1 && is_report_file(entry.path())
}

/// `PORT.md` starting with a port's heading, `port.json` of the port's format.
fn is_report_file(path: &Path) -> bool {
    let Some(name) = path.file_name() else {
        return false;
    };
    if !path.is_file() || path.is_symlink() {
        return false;
    }
    let head = |n: usize| -> String {
        use std::io::Read as _;
        let mut buf = vec![0; n];
        let got = std::fs::File::open(path)
            .and_then(|mut f| f.read(&mut buf))
            .unwrap_or(0);
        String::from_utf8_lossy(&buf[..got]).into_owned()
    };
    if name == crate::MARKDOWN_FILE {
        head(64).starts_with("# Port report")
    } else if name == crate::JSON_FILE {
        head(256).contains("\"format\": \"modelzoo-port\"")
    } else {
        false
    }
}

/// The earlier port's files at the top of `src` (for the report).
fn earlier_port_files(src: &Path) -> Vec<&'static str> {
    let mut found = Vec::new();
    if src.join(crate::WORK_DIR).is_dir() && !src.join(crate::WORK_DIR).is_symlink() {
        found.push(crate::WORK_DIR);
    }
    for name in [crate::MARKDOWN_FILE, crate::JSON_FILE] {
        if is_report_file(&src.join(name)) {
            found.push(name);
        }
    }
    found
}

/// `p` with `.` and `..` resolved lexically (symlinks are not followed: a link's target is
/// judged by where it names, as the kernel resolves it from the link's own directory).
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The relative path from directory `from` to `to` (both relative to one root).
fn relative_from(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<_> = from.components().collect();
    let to_parts: Vec<_> = to.components().collect();
    let common = from
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for c in &to_parts[common..] {
        out.push(c.as_os_str());
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// In `dir` (a run's directory, the parent of the project's copy), a symlink to every entry
/// of `src`'s parent directory except `src` itself and whatever holds `out`, so a path the
/// script reads relative to its directory's parent (`../data`) reaches the same files in
/// every run.
pub fn link_parent_entries(src: &Path, out: &Path, dir: &Path) -> Result<usize, PortError> {
    let Some(parent) = src.parent() else {
        return Ok(0);
    };
    let io = |path: &Path, e: std::io::Error| PortError::Copy {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let entries = match std::fs::read_dir(parent) {
        Ok(e) => e,
        // An unreadable parent: nothing to reach there either.
        Err(_) => return Ok(0),
    };
    let mut n = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path == src || out.starts_with(&path) {
            continue;
        }
        let link = dir.join(entry.file_name());
        std::os::unix::fs::symlink(&path, &link).map_err(|e| io(&link, e))?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_into_the_project_are_repointed_and_links_outside_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let src = root.join("proj");
        std::fs::create_dir_all(src.join("sub/ckpt")).unwrap();
        std::fs::write(src.join("train.py"), "print(1)\n").unwrap();
        let abs = src.join("sub/ckpt");
        std::os::unix::fs::symlink(&abs, src.join("ckpt")).unwrap();
        std::os::unix::fs::symlink("../../../proj/train.py", src.join("sub/ckpt/t.py")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", src.join("host")).unwrap();
        std::os::unix::fs::symlink("../data", src.join("data")).unwrap();
        std::fs::create_dir_all(src.join(".modelzoo-port/inventory")).unwrap();
        std::fs::write(src.join("PORT.md"), "# Port report: PASS\n").unwrap();
        std::fs::create_dir_all(src.join("ro")).unwrap();
        std::fs::write(src.join("ro/f.txt"), "r").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(src.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
        let dst = root.join("copy");
        std::fs::create_dir(&dst).unwrap();
        let c = copy_tree(&src, &dst, &[]).unwrap();
        assert_eq!(
            std::fs::read_link(dst.join("ckpt")).unwrap(),
            dst.join("sub/ckpt")
        );
        // Relative and escaping through `..` into the project: relative within the copy.
        assert_eq!(
            std::fs::read_link(dst.join("sub/ckpt/t.py")).unwrap(),
            Path::new("../../train.py")
        );
        assert_eq!(
            std::fs::read_to_string(dst.join("sub/ckpt/t.py")).unwrap(),
            "print(1)\n"
        );
        assert_eq!(
            std::fs::read_link(dst.join("host")).unwrap(),
            Path::new("/etc/hostname")
        );
        assert_eq!(
            std::fs::read_link(dst.join("data")).unwrap(),
            Path::new("../data")
        );
        let outside: Vec<_> = c.links_outside.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(outside, [PathBuf::from("data"), PathBuf::from("host")]);
        assert!(!dst.join(".modelzoo-port").exists());
        assert!(!dst.join("PORT.md").exists());
        assert_eq!(c.not_copied.len(), 2, "{:?}", c.not_copied);
        // A read-only directory is copied with its files, and stays read-only.
        assert_eq!(std::fs::read_to_string(dst.join("ro/f.txt")).unwrap(), "r");
        let mode = std::fs::metadata(dst.join("ro"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o555);
        for d in [&src, &dst] {
            std::fs::set_permissions(d.join("ro"), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}
