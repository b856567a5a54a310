//! Opening a file a user names without ever blocking on it. `File::open` on a FIFO waits for
//! a writer (forever, when none comes) and a device may never end, so every file the tools
//! read from user input — model.yaml, a log a command left behind, a console log — is opened
//! non-blocking and refused unless it is a regular file. The check is on the opened file
//! (`fstat`), so a file swapped for a FIFO after a `stat` cannot slip through.

use std::fs::{File, FileType};
use std::io::{self, Read};
use std::path::Path;

/// What a file is, for messages: `a FIFO`, `a directory`, ... (one function for every tool).
pub use modelzoo_support::output::kind;

/// The error for a path that is not a regular file: `not a regular file (a FIFO)`, kind
/// `InvalidInput`, so callers can tell it from a missing file.
pub fn not_regular(t: FileType) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file ({})", kind(t)),
    )
}

/// Opens `path` for reading when it is a regular file (symlinks followed); anything else is an
/// `InvalidInput` error naming what it is. Never blocks: this is
/// [`modelzoo_support::input::open_regular`] (`O_NONBLOCK`, then `fstat` on the opened file),
/// with this module's shorter messages for callers that name the file themselves.
pub fn open_regular(path: &Path) -> io::Result<File> {
    use modelzoo_support::input::InputError;
    modelzoo_support::input::open_regular(path, "file").map_err(|e| match e {
        InputError::NotRegular { kind, .. } => io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({kind})"),
        ),
        InputError::Io { source, .. } => source,
        other => other.into(),
    })
}

/// The text of a regular file ([`open_regular`]); invalid UTF-8 is an `InvalidData` error.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    open_regular(path)?.read_to_string(&mut text)?;
    Ok(text)
}

/// [`read_to_string`] for a file that has no business being larger than `max` bytes (an index
/// such as model.yaml): a larger one is an `InvalidData` error saying so, read no further, so
/// the memory a tool holds stays bounded whatever the file's size.
pub fn read_to_string_at_most(path: &Path, max: u64) -> io::Result<String> {
    let mut bytes = Vec::new();
    open_regular(path)?.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {max} bytes, the most this file can sensibly hold: not read"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The bytes of a regular file ([`open_regular`]).
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_at_once_and_named() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("model.yaml");
        let ok = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(ok.success());
        let err = read_to_string(&fifo).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(err.to_string(), "not a regular file (a FIFO)");
        let err = read_to_string(tmp.path()).unwrap_err();
        assert_eq!(err.to_string(), "not a regular file (a directory)");
        std::fs::write(tmp.path().join("ok.yaml"), "models: []\n").unwrap();
        assert_eq!(
            read_to_string(&tmp.path().join("ok.yaml")).unwrap(),
            "models: []\n"
        );
    }
}
