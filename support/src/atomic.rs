//! Atomic file writes: the bytes go to a temp file in the target's directory, are fsynced,
//! then renamed over the target, so a reader or a crash never sees half a file.

use std::fs::{File, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// Writes `bytes` to `path` atomically. A new file gets mode 0644 (a report or config anyone
/// may read, not the temp file's private 0600); a replaced file keeps its mode. The directory
/// must exist; when it does not, the error names it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    AtomicFile::create(path)?.write_and_commit(bytes)
}

/// A file being written atomically, for writers that stream (checkpoints) or need more than
/// [`write_atomic`]: their own temp-file name, or never replacing a file. Dropped without a
/// commit, it removes its temp file and leaves the target as it was.
#[derive(Debug)]
pub struct AtomicFile {
    tmp: NamedTempFile,
    path: PathBuf,
}

impl AtomicFile {
    /// Starts writing `path` through a temp file `.tmpXXXXXX` beside it.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        AtomicFile::with_temp_name(path, ".tmp", "")
    }

    /// Starts writing `path` through a temp file `<prefix>XXXXXX<suffix>` beside it, so the
    /// caller can recognise (and clean up) what a killed run left.
    pub fn with_temp_name(path: &Path, prefix: &str, suffix: &str) -> io::Result<AtomicFile> {
        // tempfile's error names the temp file, and so the missing or unwritable directory.
        let tmp = tempfile::Builder::new()
            .prefix(prefix)
            .suffix(suffix)
            .tempfile_in(parent_dir(path))?;
        Ok(AtomicFile {
            tmp,
            path: path.to_path_buf(),
        })
    }

    /// The temp file to write to. Writing through the `File` (not the `NamedTempFile`) keeps
    /// the temp file's name out of write errors: callers name the target.
    pub fn file_mut(&mut self) -> &mut File {
        self.tmp.as_file_mut()
    }

    /// Writes `bytes` and commits: [`write_atomic`] with this file's temp name.
    pub fn write_and_commit(mut self, bytes: &[u8]) -> io::Result<()> {
        self.file_mut().write_all(bytes)?;
        self.commit()
    }

    /// Fsyncs the temp file and renames it over the target (mode: see [`write_atomic`]).
    pub fn commit(self) -> io::Result<()> {
        let permissions = std::fs::metadata(&self.path)
            .map(|m| m.permissions())
            .unwrap_or_else(|_| Permissions::from_mode(0o644));
        let (tmp, path) = self.prepare(permissions)?;
        tmp.persist(&path).map_err(|e| e.error)?;
        sync_dir(&path);
        Ok(())
    }

    /// Like [`AtomicFile::commit`] but never replaces a file: a target that exists by now is
    /// an [`io::ErrorKind::AlreadyExists`] error. The new file gets mode 0644.
    pub fn commit_new(self) -> io::Result<()> {
        let (tmp, path) = self.prepare(Permissions::from_mode(0o644))?;
        tmp.persist_noclobber(&path).map_err(|e| e.error)?;
        sync_dir(&path);
        Ok(())
    }

    /// Fsyncs the temp file and gives it `permissions`, ready to be renamed.
    fn prepare(self, permissions: Permissions) -> io::Result<(NamedTempFile, PathBuf)> {
        self.tmp.as_file().sync_all()?;
        std::fs::set_permissions(self.tmp.path(), permissions)?;
        Ok((self.tmp, self.path))
    }
}

/// The directory `path` is in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Best effort: fsync the directory so the rename itself survives a crash.
fn sync_dir(path: &Path) {
    if let Ok(d) = File::open(parent_dir(path)) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn writes_a_new_file_readable_by_all_and_leaves_no_temp_file() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("out.txt");
        write_atomic(&path, b"hello\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"hello\n");
        assert_eq!(mode(&path), 0o644);
        assert_eq!(names(t.path()), vec!["out.txt"]);
    }

    #[test]
    fn replaces_a_file_keeping_its_mode() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("run.sh");
        std::fs::write(&path, "old, longer text\n").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o755)).unwrap();
        write_atomic(&path, b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        assert_eq!(mode(&path), 0o755);
        assert_eq!(names(t.path()), vec!["run.sh"]);
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_it() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("missing");
        let err = write_atomic(&dir.join("out.txt"), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains(&*dir.to_string_lossy()), "{err}");
    }

    #[test]
    fn a_temp_name_is_kept_and_an_uncommitted_file_leaves_nothing() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("a.ckpt");
        let mut f = AtomicFile::with_temp_name(&path, ".ckpt-", ".tmp").unwrap();
        f.file_mut().write_all(b"partial").unwrap();
        let temp = names(t.path());
        assert_eq!(temp.len(), 1);
        assert!(
            temp[0].starts_with(".ckpt-") && temp[0].ends_with(".tmp"),
            "{temp:?}"
        );
        drop(f);
        assert!(names(t.path()).is_empty());
    }

    #[test]
    fn commit_new_never_replaces() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("x");
        let mut f = AtomicFile::create(&path).unwrap();
        f.file_mut().write_all(b"first").unwrap();
        f.commit_new().unwrap();
        let f = AtomicFile::create(&path).unwrap();
        let err = f.commit_new().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        assert_eq!(names(t.path()), vec!["x"]);
    }
}
