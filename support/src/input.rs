//! Reading a file a user names, without hanging and within a stated bound. `File::open` on a
//! FIFO waits for a writer (forever, when none comes), `/dev/zero` never ends, and a 2 GB file
//! named `tokenizer.json` would be read whole before it is parsed. So every file a tool reads
//! from user input goes through here: [`open_regular`] opens it non-blocking and refuses it
//! unless the *opened* file (`fstat`) is a regular file — a file swapped for a FIFO after a
//! `stat` cannot slip through — and [`read_bounded`] / [`read_to_string_bounded`] refuse a file
//! past the bound its format can sensibly need, before reading it. Line formats are streamed
//! with [`read_line_bounded`], which holds at most one bounded line. Every error names the file,
//! what it was given as (`--tokenizer`, `log`, ...) and what to do.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// One mebibyte, for stating bounds.
pub const MIB: u64 = 1 << 20;

/// Why a user's input file was not read; every variant names the file and what it was given as.
/// Displayed as `<what> <path>: <reason>` ([`InputError::reason`] alone for messages that
/// already name the file).
#[derive(Debug)]
pub enum InputError {
    /// A FIFO, device, socket or directory: reading it could block forever or never end.
    NotRegular {
        what: String,
        path: PathBuf,
        kind: &'static str,
    },
    /// Larger than the most this kind of file can sensibly hold: not read.
    TooLarge {
        what: String,
        path: PathBuf,
        max: u64,
        size: Option<u64>,
    },
    /// Opening or reading failed (missing, permission, ...).
    Io {
        what: String,
        path: PathBuf,
        source: io::Error,
    },
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self {
            InputError::NotRegular { what, .. }
            | InputError::TooLarge { what, .. }
            | InputError::Io { what, .. } => what,
        };
        write!(f, "{what} {}: {}", self.path().display(), self.reason())
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl InputError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            InputError::NotRegular { path, .. }
            | InputError::TooLarge { path, .. }
            | InputError::Io { path, .. } => path,
        }
    }

    /// What is wrong and what to do, without the file's name (for messages that name it).
    pub fn reason(&self) -> String {
        match self {
            InputError::NotRegular { kind, .. } => format!(
                "is {kind}, not a regular file: give the path of a regular file (a FIFO or device could block or never end)"
            ),
            InputError::TooLarge { max, size, .. } => format!(
                "is larger than {max} bytes ({}), the most it may be: not read — check that this is the right file{}",
                human(*max),
                size.map(|s| format!(" (it has {s} bytes)")).unwrap_or_default()
            ),
            InputError::Io { source, .. } => format!("cannot read: {source}"),
        }
    }

    /// The error as an `io::Error` whose message is [`InputError::reason`] (kind as in the
    /// `From` conversion), for errors that name the file themselves.
    pub fn into_io_reason(self) -> io::Error {
        let reason = self.reason();
        match self {
            InputError::Io { source, .. } => source,
            InputError::NotRegular { .. } => io::Error::new(io::ErrorKind::InvalidInput, reason),
            InputError::TooLarge { .. } => io::Error::new(io::ErrorKind::InvalidData, reason),
        }
    }

    /// True when the file does not exist (callers that try several names need to tell).
    pub fn is_not_found(&self) -> bool {
        matches!(self, InputError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

impl From<InputError> for io::Error {
    /// For callers whose errors are `io::Error`: the kind says which case (`InvalidInput`: not
    /// a regular file, `InvalidData`: too large), the message names the file.
    fn from(e: InputError) -> io::Error {
        let kind = match &e {
            InputError::NotRegular { .. } => io::ErrorKind::InvalidInput,
            InputError::TooLarge { .. } => io::ErrorKind::InvalidData,
            InputError::Io { source, .. } => source.kind(),
        };
        io::Error::new(kind, e.to_string())
    }
}

/// `1073741824` → `1 GiB`, for messages.
fn human(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{} {unit}", bytes / size);
        }
    }
    format!("{bytes} B")
}

fn io_error(what: &str, path: &Path, source: io::Error) -> InputError {
    InputError::Io {
        what: what.to_string(),
        path: path.to_path_buf(),
        source,
    }
}

/// Opens `path` for reading when it is a regular file (symlinks followed); anything else is
/// [`InputError::NotRegular`]. Never blocks: the file is opened with `O_NONBLOCK` (a no-op for
/// regular files) and checked with `fstat` on the opened descriptor. `what` says what the file
/// was given as (`--tokenizer`, `log`), for the message.
pub fn open_regular(path: &Path, what: &str) -> Result<File, InputError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| io_error(what, path, e))?;
    let meta = file.metadata().map_err(|e| io_error(what, path, e))?;
    if !meta.is_file() {
        return Err(InputError::NotRegular {
            what: what.to_string(),
            path: path.to_path_buf(),
            kind: crate::output::kind(meta.file_type()),
        });
    }
    Ok(file)
}

/// Checks that `path` is a regular file without reading it, for files another library opens
/// itself (libtorch's checkpoint and safetensors loaders): a FIFO given there would block the
/// loader where no signal can end it. Returns the file's size.
pub fn check_regular(path: &Path, what: &str) -> Result<u64, InputError> {
    let file = open_regular(path, what)?;
    let len = file.metadata().map_err(|e| io_error(what, path, e))?.len();
    Ok(len)
}

/// Opens `path` as [`open_regular`] and refuses it when it is larger than `max` bytes.
pub fn open_bounded(path: &Path, max: u64, what: &str) -> Result<File, InputError> {
    let file = open_regular(path, what)?;
    let size = file.metadata().map_err(|e| io_error(what, path, e))?.len();
    if size > max {
        return Err(InputError::TooLarge {
            what: what.to_string(),
            path: path.to_path_buf(),
            max,
            size: Some(size),
        });
    }
    Ok(file)
}

/// The bytes of a regular file of at most `max` bytes: larger is [`InputError::TooLarge`],
/// refused before anything is read (and, should the file grow while it is read, nothing past
/// `max` is held).
pub fn read_bounded(path: &Path, max: u64, what: &str) -> Result<Vec<u8>, InputError> {
    let file = open_bounded(path, max, what)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(size.min(max) as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(what, path, e))?;
    if bytes.len() as u64 > max {
        return Err(InputError::TooLarge {
            what: what.to_string(),
            path: path.to_path_buf(),
            max,
            size: None,
        });
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text; invalid UTF-8 is an [`InputError::Io`] of kind
/// `InvalidData`.
pub fn read_to_string_bounded(path: &Path, max: u64, what: &str) -> Result<String, InputError> {
    let bytes = read_bounded(path, max, what)?;
    String::from_utf8(bytes).map_err(|e| {
        io_error(
            what,
            path,
            io::Error::new(io::ErrorKind::InvalidData, format!("not UTF-8 text: {e}")),
        )
    })
}

/// What [`read_line_bounded`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// A line (without its `\n`) is in the buffer.
    Read,
    /// The line was longer than the bound: the buffer holds its first `max` bytes, the rest of
    /// the line was skipped (read, not held).
    TooLong,
    /// End of input: nothing was read.
    Eof,
}

/// Reads one line (up to `\n`, which is not kept) into `buf`, holding at most `max` bytes of
/// it whatever the line's length, so a one-line 2 GB file costs `max` bytes of memory. The
/// caller decides whether a [`Line::TooLong`] is an error (usually it is: say which line and
/// the bound).
pub fn read_line_bounded<R: BufRead + ?Sized>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Line> {
    buf.clear();
    let mut any = false;
    let mut too_long = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (take, newline) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        if take > room {
            too_long = true;
        }
        buf.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(take + usize::from(newline));
        if newline {
            break;
        }
    }
    Ok(if !any {
        Line::Eof
    } else if too_long {
        Line::TooLong
    } else {
        Line::Read
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Cursor};
    use std::process::Command;
    use std::time::{Duration, Instant};

    fn mkfifo(path: &Path) {
        assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
    }

    #[test]
    fn a_fifo_and_a_directory_are_refused_at_once_and_named() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("tokenizer.json");
        mkfifo(&fifo);
        for f in [
            |p: &Path| open_regular(p, "--tokenizer").map(drop),
            |p: &Path| read_bounded(p, 10, "--tokenizer").map(drop),
            |p: &Path| check_regular(p, "--tokenizer").map(drop),
        ] {
            // On a thread: an open that blocks fails the test instead of hanging it.
            let (tx, rx) = std::sync::mpsc::channel();
            let p = fifo.clone();
            std::thread::spawn(move || tx.send(f(&p).unwrap_err()).unwrap());
            let err = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("blocked on a FIFO");
            assert!(matches!(err, InputError::NotRegular { kind: "a FIFO", .. }));
            let msg = err.to_string();
            assert!(
                msg.starts_with(&format!("--tokenizer {}: is a FIFO", fifo.display())),
                "{msg}"
            );
            assert!(msg.contains("give the path of a regular file"), "{msg}");
        }
        let err = read_to_string_bounded(t.path(), 10, "-c").unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
        let io: io::Error = err.into();
        assert_eq!(io.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_character_device_is_refused() {
        let err = read_bounded(Path::new("/dev/zero"), 1 << 20, "--pretrained").unwrap_err();
        assert!(err.to_string().contains("is a character device"), "{err}");
    }

    #[test]
    fn a_file_past_its_bound_is_refused_before_it_is_read() {
        let t = tempfile::tempdir().unwrap();
        let big = t.path().join("tokenizer.json");
        // Sparse: 3 GiB of nothing on disk; reading it whole would take 3 GiB of memory.
        File::create(&big).unwrap().set_len(3 << 30).unwrap();
        let started = Instant::now();
        let err = read_bounded(&big, 64 * MIB, "--tokenizer").unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2), "it was read");
        assert!(
            matches!(err, InputError::TooLarge { max, size: Some(s), .. } if max == 64 * MIB && s == 3 << 30)
        );
        let msg = err.to_string();
        assert!(msg.contains("larger than 67108864 bytes (64 MiB)"), "{msg}");
        assert!(msg.contains(&big.display().to_string()), "{msg}");
        let io: io::Error = err.into();
        assert_eq!(io.kind(), io::ErrorKind::InvalidData);
        // At the bound exactly it is read.
        let ok = t.path().join("ok.json");
        std::fs::write(&ok, "{\"a\":1}").unwrap();
        assert_eq!(read_to_string_bounded(&ok, 7, "x").unwrap(), "{\"a\":1}");
        assert!(read_to_string_bounded(&ok, 6, "x").is_err());
    }

    #[test]
    fn missing_and_non_utf8_files_say_so() {
        let t = tempfile::tempdir().unwrap();
        let err = read_bounded(&t.path().join("none"), 1, "--resume").unwrap_err();
        assert!(err.is_not_found());
        assert!(err.to_string().starts_with("--resume "), "{err}");
        let bin = t.path().join("bin");
        std::fs::write(&bin, [0xff, 0xfe]).unwrap();
        let err = read_to_string_bounded(&bin, 10, "-c").unwrap_err();
        assert!(err.to_string().contains("not UTF-8"), "{err}");
    }

    #[test]
    fn lines_are_held_up_to_the_bound_and_the_rest_skipped() {
        let text = format!("short\n{}\nlast", "x".repeat(100));
        // A tiny buffer so a line spans many fills.
        let mut r = BufReader::with_capacity(7, Cursor::new(text.into_bytes()));
        let mut buf = Vec::new();
        assert_eq!(read_line_bounded(&mut r, &mut buf, 10).unwrap(), Line::Read);
        assert_eq!(buf, b"short");
        assert_eq!(
            read_line_bounded(&mut r, &mut buf, 10).unwrap(),
            Line::TooLong
        );
        assert_eq!(buf, b"xxxxxxxxxx");
        assert!(buf.capacity() < 100);
        assert_eq!(read_line_bounded(&mut r, &mut buf, 10).unwrap(), Line::Read);
        assert_eq!(buf, b"last");
        assert_eq!(read_line_bounded(&mut r, &mut buf, 10).unwrap(), Line::Eof);
        // An empty line is a line, not the end.
        let mut r = Cursor::new(b"\n".to_vec());
        assert_eq!(read_line_bounded(&mut r, &mut buf, 10).unwrap(), Line::Read);
        assert!(buf.is_empty());
        assert_eq!(read_line_bounded(&mut r, &mut buf, 10).unwrap(), Line::Eof);
    }
}
