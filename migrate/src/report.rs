//! What a migration found, as data: the changes, the findings that need a person, the files
//! skipped and those written before. The walker ([`crate::tree`]) fills it, the record
//! ([`crate::record`]) keeps it across runs, and paths are shown through [`display_path`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
    /// For each old line (index 0 is line 1), its 1-based line in the new text.
    #[serde(skip)]
    pub line_map: Vec<usize>,
    /// The new text's changed lines, e.g. `3, 8-9`.
    pub changed_lines: String,
}

/// A finding the user must look at, located in a file.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Path relative to the migrated directory.
    pub path: PathBuf,
    pub line: usize,
    pub rule: &'static str,
    pub message: String,
    /// Not found again by this run's rules but recorded in MIGRATION.md by an earlier `--write`
    /// (and its line is still there): still needs a person.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recorded: bool,
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
    /// The project's C++/CUDA extensions and the Python that calls them (no rule migrates
    /// them: a person ports each op).
    #[serde(skip_serializing_if = "crate::custom_ops::CustomOps::is_empty")]
    pub custom_ops: crate::custom_ops::CustomOps,
    /// Temp files an interrupted `--write` left (removed by the next `--write`).
    pub leftover_temp: Vec<PathBuf>,
    /// Every file the migration read (relative to `root`): what an output path must not be.
    #[serde(skip)]
    pub inputs: Vec<PathBuf>,
    /// Files rewritten by earlier `--write` runs, as MIGRATION.md recorded them.
    #[serde(skip)]
    pub written_before: Vec<WrittenFile>,
}

/// A file a `--write` rewrote, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrittenFile {
    /// Path relative to the migrated directory.
    pub path: PathBuf,
    /// Changed lines of the written file, e.g. `3, 8-9`.
    pub lines: String,
    /// Rewrites per rule, e.g. `apex-amp×4, cuda-method×3`.
    pub rewrites: String,
}

/// A path as shown to people and in diff headers: as is, or C-quoted the way git quotes it
/// (`"a\nb.py"`) when it holds a control character, `"`, `\\` or bytes that are not UTF-8, so a
/// name with a newline cannot break a line-oriented listing or a patch.
pub fn display_path(path: &Path) -> String {
    quote_path("", path)
}

pub(crate) fn quote_path(prefix: &str, path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let plain = std::str::from_utf8(bytes)
        .ok()
        .filter(|s| !s.chars().any(|c| c.is_control() || c == '"' || c == '\\'));
    if let Some(s) = plain {
        return format!("{prefix}{s}");
    }
    let mut out = String::from("\"");
    out.push_str(prefix);
    let lossy = String::from_utf8_lossy(bytes);
    let valid = std::str::from_utf8(bytes).is_ok();
    if valid {
        for c in lossy.chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() && (c as u32) < 0x100 => {
                    out.push_str(&format!("\\{:03o}", c as u32))
                }
                c => out.push(c),
            }
        }
    } else {
        for &b in bytes {
            match b {
                b'\n' => out.push_str("\\n"),
                b'\t' => out.push_str("\\t"),
                b'\r' => out.push_str("\\r"),
                b'"' => out.push_str("\\\""),
                b'\\' => out.push_str("\\\\"),
                0x20..=0x7e => out.push(b as char),
                b => out.push_str(&format!("\\{b:03o}")),
            }
        }
    }
    out.push('"');
    out
}
