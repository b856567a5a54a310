//! Where a report may be written. A report writer replaces its target atomically (a temp file
//! renamed over it), which is right for a report and wrong for anything else at that path: run
//! as root, `--md /dev/null` would turn the device node into a regular file; a FIFO, a
//! directory or a symbolic link would be replaced by a file; and `--md README.md` in the model
//! directory being validated would overwrite the very input the report is about. So every
//! writer checks its output path first ([`check_output_path`]) or writes through
//! [`write_report`], which checks and then writes atomically.

use std::fs::{FileType, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Why a report cannot go to a path: it names the path and what is there, and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum OutputPathError {
    /// Something other than a regular file is there (a device, FIFO, socket, directory or
    /// symbolic link): a report would replace it.
    #[error(
        "{}: is {kind}, not a regular file: a report written there would replace it — give the path of a new or regular file",
        path.display()
    )]
    NotRegular { path: PathBuf, kind: &'static str },
    /// The path is one of the tool's own inputs (or a file inside an input directory).
    #[error(
        "{}: is one of this command's inputs ({}): a report written there would overwrite it — write the report somewhere else",
        path.display(),
        input.display()
    )]
    IsInput { path: PathBuf, input: PathBuf },
    /// Two reports of one run were given the same path.
    #[error(
        "{}: given for two reports ({first} and {second}): the second would overwrite the first — give each its own file",
        path.display()
    )]
    Twice {
        path: PathBuf,
        first: String,
        second: String,
    },
    /// The path could not be examined (a permission error on its directory, ...).
    #[error("{}: cannot check it before writing: {error}", path.display())]
    Io { path: PathBuf, error: io::Error },
}

/// What a file type is, for messages: `a FIFO`, `a character device`, ...
pub fn kind(t: FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Checks that a report may be written to `path`: it is absent or a regular file (not a
/// symbolic link, device, FIFO, socket or directory), and it is none of `inputs` — the files
/// and directories the command reads. An existing `path` is an input when it is the same file
/// as an input file (by device and inode, so another spelling, a hard link or a symbolic link
/// to it counts) or lies inside an input directory (every file there is the tool's to read).
/// Inputs that do not exist are ignored.
pub fn check_output_path(path: &Path, inputs: &[&Path]) -> Result<(), OutputPathError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        // Nothing there (or a parent is not a directory: the write itself then fails, naming
        // the path).
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(())
        }
        Err(error) => {
            return Err(OutputPathError::Io {
                path: path.to_path_buf(),
                error,
            })
        }
    };
    if !meta.file_type().is_file() {
        return Err(OutputPathError::NotRegular {
            path: path.to_path_buf(),
            kind: kind(meta.file_type()),
        });
    }
    let real = std::fs::canonicalize(path).ok();
    for input in inputs {
        let Ok(im) = std::fs::metadata(input) else {
            continue;
        };
        let is_input = if im.is_dir() {
            match (&real, std::fs::canonicalize(input)) {
                (Some(real), Ok(dir)) => real.starts_with(&dir),
                _ => false,
            }
        } else {
            same_file(&meta, &im)
        };
        if is_input {
            return Err(OutputPathError::IsInput {
                path: path.to_path_buf(),
                input: input.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// Checks every output of one run ([`check_output_path`]), and that no two of them are the
/// same path: `outputs` are `(what, path)` pairs, e.g. `("--md", path)`.
pub fn check_output_paths(
    outputs: &[(&str, &Path)],
    inputs: &[&Path],
) -> Result<(), OutputPathError> {
    for (i, (what, path)) in outputs.iter().enumerate() {
        check_output_path(path, inputs)?;
        let key = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        if let Some((first, _)) = outputs[..i].iter().find(|(_, p)| key(p) == key(path)) {
            return Err(OutputPathError::Twice {
                path: path.to_path_buf(),
                first: first.to_string(),
                second: what.to_string(),
            });
        }
    }
    Ok(())
}

fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Writes a report: [`check_output_path`] against `inputs`, then
/// [`crate::write_atomic`]. The check is repeated here, at the moment of writing, because a
/// long run (ci) may have left the path changed since it was first checked.
pub fn write_report(path: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<(), OutputPathError> {
    check_output_path(path, inputs)?;
    crate::write_atomic(path, bytes).map_err(|error| OutputPathError::Io {
        path: path.to_path_buf(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn mkfifo(path: &Path) {
        assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
    }

    #[test]
    fn absent_and_regular_files_may_be_written() {
        let t = tempfile::tempdir().unwrap();
        let new = t.path().join("new.md");
        check_output_path(&new, &[]).unwrap();
        std::fs::write(&new, "old report").unwrap();
        check_output_path(&new, &[]).unwrap();
        write_report(&new, b"report", &[]).unwrap();
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "report");
        // Under a file: nothing is there; the write itself fails, naming the path.
        let under = new.join("x.md");
        check_output_path(&under, &[]).unwrap();
        assert!(write_report(&under, b"x", &[]).is_err());
    }

    #[test]
    fn a_fifo_a_directory_and_a_symlink_are_refused_and_left_alone() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("pipe");
        mkfifo(&fifo);
        let dir = t.path().join("dir.md");
        std::fs::create_dir(&dir).unwrap();
        let target = t.path().join("target.md");
        std::fs::write(&target, "kept").unwrap();
        let link = t.path().join("link.md");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for (path, what) in [
            (&fifo, "a FIFO"),
            (&dir, "a directory"),
            (&link, "a symbolic link"),
        ] {
            let err = write_report(path, b"x", &[]).unwrap_err();
            assert!(
                matches!(err, OutputPathError::NotRegular { kind, .. } if kind == what),
                "{err}"
            );
            let msg = err.to_string();
            assert!(
                msg.starts_with(&path.display().to_string()) && msg.contains(what),
                "{msg}"
            );
        }
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        assert!(dir.is_dir());
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
    }

    /// A character device like /dev/null: made with mknod in a temp directory (never in
    /// /dev), which needs root — the CI runs as root; elsewhere the FIFO test covers the rule.
    #[test]
    fn a_character_device_is_refused_when_one_can_be_made() {
        let t = tempfile::tempdir().unwrap();
        let dev = t.path().join("null");
        let made = Command::new("mknod")
            .arg(&dev)
            .args(["c", "1", "3"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !made {
            eprintln!("mknod needs root: the character-device case is not run here");
            return;
        }
        let err = write_report(&dev, b"x", &[]).unwrap_err();
        assert!(err.to_string().contains("a character device"), "{err}");
        assert!(std::fs::symlink_metadata(&dev)
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[test]
    fn an_input_file_or_a_file_inside_an_input_directory_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let model = t.path().join("Model");
        std::fs::create_dir(&model).unwrap();
        let readme = model.join("README.md");
        std::fs::write(&readme, "# the model\n").unwrap();
        let yaml = t.path().join("model.yaml");
        std::fs::write(&yaml, "models: []\n").unwrap();
        let inputs: [&Path; 2] = [&model, &yaml];
        // The README inside the directory being checked, under another spelling too.
        let other = model.join("../Model/./README.md");
        for path in [&readme, &other] {
            let err = write_report(path, b"report", &inputs).unwrap_err();
            assert!(matches!(err, OutputPathError::IsInput { .. }), "{err}");
        }
        assert_eq!(std::fs::read_to_string(&readme).unwrap(), "# the model\n");
        // A hard link to an input file is that file.
        let hard = t.path().join("hard.md");
        std::fs::hard_link(&yaml, &hard).unwrap();
        let err = check_output_path(&hard, &inputs).unwrap_err();
        assert!(err.to_string().contains("inputs"), "{err}");
        // A new file inside an input directory is nobody's input; a file beside it is fine.
        check_output_path(&model.join("review.md"), &inputs).unwrap();
        let beside = t.path().join("review.md");
        std::fs::write(&beside, "old").unwrap();
        check_output_path(&beside, &inputs).unwrap();
    }

    #[test]
    fn two_reports_to_one_path_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("r.xml");
        let same = t.path().join("./r.xml");
        let err = check_output_paths(&[("--junit", &a), ("--md", &same)], &[]).unwrap_err();
        assert!(err.to_string().contains("--junit and --md"), "{err}");
        check_output_paths(&[("--junit", &a), ("--md", &t.path().join("r.md"))], &[]).unwrap();
    }
}
