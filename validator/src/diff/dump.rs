//! One dump of one training step, read from disk: the modelzoo format (`meta.json` +
//! `records.jsonl` + `tensors/*.npy`, docs/diff.md) or an msprobe statistics dump
//! (`dump.json`, read by [`super::msprobe`]); [`super::load`] reads either.
//!
//! A path given on the command line may name the step directory itself, a dump root holding
//! `rank<r>/step<N>/` directories, or msprobe's `dump.json` (or a directory holding one).

use std::io::{BufReader, Read};
use std::path::{Component, Path, PathBuf};

use modelzoo_support::input::Line;
use serde::{Deserialize, Serialize};

use super::DiffError;

/// The `format` value of a modelzoo dump's meta.json.
pub const FORMAT: &str = "modelzoo-dump";
/// The newest format version this reader understands.
pub const VERSION: u32 = 1;

/// meta.json: what was dumped, so that two dumps of different models or steps are refused.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub format: String,
    pub version: u32,
    /// `pytorch` (the Python probe), `modelzoo` (the Rust binaries) or `msprobe`.
    pub framework: String,
    /// The model's name; `None` when the dump does not say (msprobe).
    pub model: Option<String>,
    pub step: Option<u64>,
    pub rank: Option<u32>,
    /// `module`, `op` or `mix`.
    pub level: String,
    /// `stats` or `full`.
    pub tensors: String,
    /// The dtype the model ran in (its first floating-point parameter's), e.g. `float32`.
    pub dtype: Option<String>,
    pub device: Option<String>,
    pub torch_version: Option<String>,
}

/// One tensor seen at one op (or module) call: one line of records.jsonl.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// `aten::<op>#<k>.<phase>.<io>.<i>` or `module::<scope>#<k>.<phase>.<io>.<i>`.
    pub key: String,
    pub op: String,
    /// 0-based call index of `op` within the step.
    pub call: u64,
    /// `forward` or `backward`.
    pub phase: String,
    /// `input` or `output`.
    pub io: String,
    pub index: u32,
    /// Module path (`layer1.0.conv1`), empty when the op ran outside any module.
    #[serde(default)]
    pub scope: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    pub l2: Option<f64>,
    /// NaN / Inf element counts; `None` where the dump does not count them (msprobe).
    pub nan: Option<u64>,
    pub inf: Option<u64>,
    /// `crc32:<8 hex digits>` of the tensor's bytes as it ran; equal checksums, equal tensors.
    pub checksum: Option<String>,
    /// With `tensors: full`: the .npy file, relative to the step directory.
    pub file: Option<String>,
}

impl Record {
    /// Number of elements the shape holds.
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
    }
}

/// A dump read into memory (records only; tensors stay on disk until compared).
#[derive(Debug, Clone)]
pub struct Dump {
    /// The step directory (or msprobe's dump.json).
    pub path: PathBuf,
    pub meta: Meta,
    pub records: Vec<Record>,
}

impl Dump {
    /// The .npy file of `record`, when the dump holds full tensors.
    pub fn tensor_path(&self, record: &Record) -> Option<PathBuf> {
        record.file.as_ref().map(|f| self.path.join(f))
    }

    /// Whether records carry tensor files.
    pub fn full(&self) -> bool {
        self.meta.tensors == "full"
    }
}

/// Opens a file of a dump for reading. Only a regular file is opened: a FIFO among a dump's
/// files would block `diff` forever, so it (or a socket, a device) is an error naming it.
pub(crate) fn open_regular(path: &Path) -> Result<std::fs::File, String> {
    model_config::files::open_regular(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidInput {
            format!("{e}: a dump holds regular files only — remove it, or dump again")
        } else {
            e.to_string()
        }
    })
}

/// The largest `records.jsonl` read: its records are held in memory (a few hundred bytes
/// each, so about two million ops); docs/diff.md, "Input bounds".
pub const MAX_RECORDS_BYTES: u64 = 512 << 20;

/// The longest line of `records.jsonl`: one record is a short JSON object (a key, an op, a
/// shape, a few statistics).
pub const MAX_RECORD_LINE: usize = 1 << 20;

/// The largest `meta.json` or msprobe `dump.json` read whole (msprobe's statistics of a large
/// model's step run to tens of MB).
pub const MAX_JSON_BYTES: u64 = 1 << 30;

/// The text of a regular file of a dump ([`open_regular`]), at most [`MAX_JSON_BYTES`].
pub(crate) fn read_text(path: &Path) -> Result<String, String> {
    let mut text = String::new();
    let file = open_regular(path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > MAX_JSON_BYTES {
        return Err(format!(
            "{size} bytes, more than the {MAX_JSON_BYTES} bytes (1 GiB) this file may take: not read — is this the right file?"
        ));
    }
    file.take(MAX_JSON_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    Ok(text)
}

/// Whether something is at `path` (without opening it: a FIFO is found, then refused when
/// read).
fn present(path: &Path) -> bool {
    path.metadata().is_ok()
}

fn not_a_dump(path: &Path, why: impl Into<String>) -> DiffError {
    DiffError::NotADump {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// Whether `dir` is one dump: a step directory or an msprobe directory. Returns the path to
/// load (the directory, or its dump.json).
fn dump_at(dir: &Path) -> Option<PathBuf> {
    if present(&dir.join("meta.json")) || present(&dir.join("records.jsonl")) {
        Some(dir.to_path_buf())
    } else if present(&dir.join("dump.json")) {
        Some(dir.join("dump.json"))
    } else {
        None
    }
}

/// The one dump `path` names (see the module doc): a step directory, or msprobe's dump.json;
/// `rank` / `step` choose one when a root holds several.
pub fn locate(path: &Path, rank: Option<u32>, step: Option<u64>) -> Result<PathBuf, DiffError> {
    let Ok(meta) = path.metadata() else {
        return Err(not_a_dump(path, "no such file or directory"));
    };
    if !meta.is_dir() {
        return if meta.is_file() && path.extension().is_some_and(|e| e == "json") {
            Ok(path.to_path_buf())
        } else if meta.is_file() {
            Err(not_a_dump(
                path,
                "a file, not a dump directory or msprobe's dump.json",
            ))
        } else {
            Err(not_a_dump(
                path,
                format!(
                    "{}, not a dump directory or msprobe's dump.json",
                    model_config::files::kind(meta.file_type())
                ),
            ))
        };
    }
    if let Some(p) = dump_at(path) {
        return Ok(p);
    }
    let mut found: Vec<PathBuf> = walkdir::WalkDir::new(path)
        .min_depth(1)
        .max_depth(3)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir())
        .filter_map(|e| dump_at(e.path()))
        .collect();
    if found.is_empty() {
        return Err(not_a_dump(
            path,
            "no meta.json, records.jsonl or msprobe dump.json in it or in its rank<r>/step<N> subdirectories",
        ));
    }
    let numbered = |p: &Path, word: &str| -> Option<u64> {
        p.components().rev().find_map(|c| match c {
            Component::Normal(s) => s.to_str()?.strip_prefix(word)?.parse().ok(),
            _ => None,
        })
    };
    found.retain(|p| {
        rank.is_none_or(|r| numbered(p, "rank") == Some(u64::from(r)))
            && step.is_none_or(|s| numbered(p, "step") == Some(s))
    });
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(not_a_dump(
            path,
            format!(
                "it holds dumps, but none for{}{}",
                rank.map(|r| format!(" rank {r}")).unwrap_or_default(),
                step.map(|s| format!(" step {s}")).unwrap_or_default()
            ),
        )),
        n => {
            let list: Vec<String> = found
                .iter()
                .take(6)
                .map(|p| p.strip_prefix(path).unwrap_or(p).display().to_string())
                .collect();
            Err(not_a_dump(
                path,
                format!(
                    "it holds {n} dumps ({}{}): choose one with --rank / --step, or give its directory",
                    list.join(", "),
                    if n > 6 { ", ..." } else { "" }
                ),
            ))
        }
    }
}

/// Read a modelzoo-format step directory (meta.json, records.jsonl, tensors/).
pub fn load_step_dir(dir: &Path) -> Result<Dump, DiffError> {
    let meta_path = dir.join("meta.json");
    if !present(&meta_path) {
        return Err(not_a_dump(
            dir,
            "records.jsonl but no meta.json: the dump did not finish (meta.json is written when the step's `with` block ends; did the process stop inside it?)",
        ));
    }
    let text = read_text(&meta_path).map_err(|message| DiffError::Read {
        path: meta_path.clone(),
        message,
    })?;
    let meta: Meta = serde_json::from_str(&text).map_err(|e| DiffError::Read {
        path: meta_path.clone(),
        message: format!("not a modelzoo dump's meta.json: {e}"),
    })?;
    if meta.format != FORMAT {
        return Err(not_a_dump(
            dir,
            format!("meta.json's format is `{}`, not `{FORMAT}`", meta.format),
        ));
    }
    if meta.version > VERSION {
        return Err(not_a_dump(
            dir,
            format!(
                "format version {} is newer than this modelzoo reads ({VERSION}): update modelzoo",
                meta.version
            ),
        ));
    }
    let records = read_records(&dir.join("records.jsonl"), meta.tensors == "full")?;
    Ok(Dump {
        path: dir.to_path_buf(),
        meta,
        records,
    })
}

fn read_records(path: &Path, full: bool) -> Result<Vec<Record>, DiffError> {
    let read_err = |message: String| DiffError::Read {
        path: path.to_path_buf(),
        message,
    };
    let file = open_regular(path).map_err(read_err)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > MAX_RECORDS_BYTES {
        return Err(read_err(format!(
            "{size} bytes, more than the {MAX_RECORDS_BYTES} bytes (512 MiB) a step's records may take: not read — dump fewer ops (modelzoo_probe's `ops=` filter) or fewer steps"
        )));
    }
    let mut records = Vec::new();
    // Streamed a line at a time, each line held up to its bound (a one-line 2 GB file costs
    // that bound, not 2 GB); and at most MAX_RECORDS_BYTES read in all, should the file grow.
    let mut reader = BufReader::new(file.take(MAX_RECORDS_BYTES + 1));
    let mut buf = Vec::new();
    let mut i = 0usize;
    loop {
        let read =
            modelzoo_support::input::read_line_bounded(&mut reader, &mut buf, MAX_RECORD_LINE)
                .map_err(|e| read_err(format!("line {}: {e}", i + 1)))?;
        match read {
            Line::Eof => break,
            Line::TooLong => {
                return Err(read_err(format!(
                    "line {}: longer than {MAX_RECORD_LINE} bytes, the most one record may take: not a dump record (a dump writes one short JSON object a line)",
                    i + 1
                )))
            }
            Line::Read => {}
        }
        i += 1;
        if reader.get_ref().limit() == 0 {
            return Err(read_err(format!(
                "grew past {MAX_RECORDS_BYTES} bytes while it was read: not read further"
            )));
        }
        let line = std::str::from_utf8(&buf)
            .map_err(|e| read_err(format!("line {i}: not UTF-8 text: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let i = i - 1;
        let r: Record = serde_json::from_str(line)
            .map_err(|e| read_err(format!("line {}: not a dump record: {e}", i + 1)))?;
        if full {
            match &r.file {
                None => {
                    return Err(read_err(format!(
                        "line {}: record `{}` has no `file`, but meta.json says tensors: full",
                        i + 1,
                        r.key
                    )))
                }
                Some(f) if !is_plain_relative(f) => {
                    return Err(read_err(format!(
                        "line {}: record `{}`'s file `{f}` is not a path inside the dump",
                        i + 1,
                        r.key
                    )))
                }
                Some(_) => {}
            }
        }
        records.push(r);
    }
    Ok(records)
}

/// A relative path that stays inside the directory (no `..`, not absolute).
fn is_plain_relative(f: &str) -> bool {
    Path::new(f)
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
}
