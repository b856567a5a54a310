//! The dump writer: one training step's captured tensors as `DIR/rank<r>/step<N>/` in the
//! modelzoo dump format, version 1 (docs/dump.md): `records.jsonl` (one record per tensor, in
//! execution order: statistics in float64 over the finite elements, NaN/Inf counts, a CRC-32 of
//! the bytes), with `full` one `.npy` per record under `tensors/`, and `meta.json` written last
//! and atomically, so a dump without it did not finish.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::capture::{Captured, DataType, Sink};

/// The `format` of meta.json.
pub const FORMAT: &str = "modelzoo-dump";
/// The format version written.
pub const VERSION: u32 = 1;

/// Why a dump could not be written.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// A dump never overwrites another: bad input (exit 2).
    #[error("{} already holds a dump of rank {rank} step {step}: a dump never overwrites one; remove it or dump into another directory", .path.display())]
    Exists { path: PathBuf, rank: u32, step: u64 },
    #[error("writing the dump {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What meta.json states about the dump.
#[derive(Debug, Clone, Serialize)]
pub struct Meta {
    pub format: &'static str,
    pub version: u32,
    /// `modelzoo` for the Rust binaries.
    pub framework: &'static str,
    pub model: String,
    pub step: u64,
    pub rank: u32,
    /// `op`, `module` or `mix`.
    pub level: String,
    /// `stats` or `full`.
    pub tensors: String,
    /// The dtype the model ran in (`float32`, `float64`).
    pub dtype: Option<String>,
    /// `cpu`, `cuda:0`, `sdaa:0`.
    pub device: String,
    pub torch_version: String,
}

/// One line of records.jsonl.
#[derive(Debug, Serialize)]
struct Record<'a> {
    key: String,
    op: &'a str,
    call: u64,
    phase: &'static str,
    io: &'static str,
    index: u32,
    scope: &'a str,
    dtype: &'a str,
    shape: &'a [i64],
    min: Option<f64>,
    max: Option<f64>,
    mean: Option<f64>,
    l2: Option<f64>,
    nan: u64,
    inf: u64,
    checksum: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
}

/// The step directory of `rank` / `step` under the dump root `dir`.
pub fn step_dir(dir: &Path, rank: u32, step: u64) -> PathBuf {
    dir.join(format!("rank{rank}")).join(format!("step{step}"))
}

/// Refuse, before anything runs, a dump root that already holds this rank and step.
pub fn check_unused(dir: &Path, rank: u32, step: u64) -> Result<(), DumpError> {
    let path = step_dir(dir, rank, step);
    if path.exists() {
        return Err(DumpError::Exists { path, rank, step });
    }
    Ok(())
}

/// Writes captured tensors as they arrive; [`DumpWriter::finish`] writes meta.json.
pub struct DumpWriter {
    dir: PathBuf,
    records: BufWriter<File>,
    full: bool,
    seq: u64,
    /// The first write error; reported by `finish` (the capture callback cannot fail).
    error: Option<DumpError>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DumpError + '_ {
    move |source| DumpError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl DumpWriter {
    /// Create `dir/rank<r>/step<N>/` (refused when it exists) and its records.jsonl.
    pub fn create(dir: &Path, rank: u32, step: u64, full: bool) -> Result<DumpWriter, DumpError> {
        let path = step_dir(dir, rank, step);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io(parent))?;
        }
        fs::create_dir(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => DumpError::Exists {
                path: path.clone(),
                rank,
                step,
            },
            _ => io(&path)(e),
        })?;
        if full {
            let t = path.join("tensors");
            fs::create_dir(&t).map_err(io(&t))?;
        }
        let file = path.join("records.jsonl");
        let records = BufWriter::new(File::create(&file).map_err(io(&file))?);
        Ok(DumpWriter {
            dir: path,
            records,
            full,
            seq: 0,
            error: None,
        })
    }

    /// The step directory written.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write(&mut self, t: &Captured<'_>) -> Result<(), DumpError> {
        let values = values_f64(t.data_type, t.data);
        let stats = Stats::of(&values);
        let phase = if t.backward { "backward" } else { "forward" };
        let io_name = if t.output { "output" } else { "input" };
        let file = if self.full {
            let short = t.op.rsplit("::").next().unwrap_or(t.op);
            let name = format!("{:06}_{short}.npy", self.seq);
            let path = self.dir.join("tensors").join(&name);
            write_npy(&path, t, &values).map_err(io(&path))?;
            Some(format!("tensors/{name}"))
        } else {
            None
        };
        self.seq += 1;
        let rec = Record {
            key: format!("{}#{}.{phase}.{io_name}.{}", t.op, t.call, t.index),
            op: t.op,
            call: t.call,
            phase,
            io: io_name,
            index: t.index,
            scope: t.scope,
            dtype: t.dtype,
            shape: t.shape,
            min: stats.min,
            max: stats.max,
            mean: stats.mean,
            l2: stats.l2,
            nan: stats.nan,
            inf: stats.inf,
            checksum: format!("crc32:{:08x}", crc32fast::hash(t.data)),
            file,
        };
        let path = self.dir.join("records.jsonl");
        serde_json::to_writer(&mut self.records, &rec)
            .map_err(std::io::Error::from)
            .and_then(|()| self.records.write_all(b"\n"))
            .map_err(io(&path))
    }

    /// Flush the records and write meta.json (atomically, last): the dump is complete.
    pub fn finish(mut self, meta: &Meta) -> Result<PathBuf, DumpError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let records = self.dir.join("records.jsonl");
        self.records.flush().map_err(io(&records))?;
        let tmp = self.dir.join(".meta.json.tmp");
        let text = serde_json::to_string_pretty(meta).map_err(|e| io(&tmp)(e.into()))?;
        fs::write(&tmp, text).map_err(io(&tmp))?;
        let path = self.dir.join("meta.json");
        fs::rename(&tmp, &path).map_err(io(&path))?;
        Ok(self.dir)
    }
}

impl Sink for DumpWriter {
    fn record(&mut self, t: &Captured<'_>) {
        if self.error.is_none() {
            if let Err(e) = self.write(t) {
                self.error = Some(e);
            }
        }
    }
}

/// The elements as float64 (exact for every type written).
fn values_f64(ty: DataType, data: &[u8]) -> Vec<f64> {
    fn each<const N: usize>(data: &[u8], f: impl Fn([u8; N]) -> f64) -> Vec<f64> {
        data.chunks_exact(N)
            .map(|c| f(c.try_into().expect("chunks_exact gives N bytes")))
            .collect()
    }
    match ty {
        DataType::U8 => data.iter().map(|&b| f64::from(b)).collect(),
        DataType::Bool => data.iter().map(|&b| f64::from(u8::from(b != 0))).collect(),
        DataType::I8 => data.iter().map(|&b| f64::from(b as i8)).collect(),
        DataType::I16 => each(data, |b| f64::from(i16::from_le_bytes(b))),
        DataType::I32 => each(data, |b| f64::from(i32::from_le_bytes(b))),
        DataType::I64 => each(data, |b| i64::from_le_bytes(b) as f64),
        DataType::F16 => each(data, |b| half::f16::from_le_bytes(b).to_f64()),
        DataType::BF16 => each(data, |b| half::bf16::from_le_bytes(b).to_f64()),
        DataType::F32 => each(data, |b| f64::from(f32::from_le_bytes(b))),
        DataType::F64 => each(data, f64::from_le_bytes),
    }
}

/// min / max / mean / L2 norm over the finite elements; NaN and ±Inf counts.
#[derive(Debug, PartialEq)]
struct Stats {
    min: Option<f64>,
    max: Option<f64>,
    mean: Option<f64>,
    l2: Option<f64>,
    nan: u64,
    inf: u64,
}

impl Stats {
    fn of(values: &[f64]) -> Stats {
        let (mut nan, mut inf, mut n) = (0u64, 0u64, 0u64);
        let (mut min, mut max, mut sum, mut sq) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0.0);
        for &v in values {
            if v.is_nan() {
                nan += 1;
            } else if v.is_infinite() {
                inf += 1;
            } else {
                n += 1;
                min = min.min(v);
                max = max.max(v);
                sum += v;
                sq += v * v;
            }
        }
        let some = |v: f64| (n > 0).then_some(v);
        Stats {
            min: some(min),
            max: some(max),
            mean: some(sum / n.max(1) as f64),
            l2: some(sq.sqrt()),
            nan,
            inf,
        }
    }
}

/// NumPy format 1.0, C order, little-endian: the tensor's own bytes, bfloat16 as float32.
fn write_npy(path: &Path, t: &Captured<'_>, values: &[f64]) -> std::io::Result<()> {
    let descr = match t.data_type {
        DataType::U8 => "|u1",
        DataType::I8 => "|i1",
        DataType::Bool => "|b1",
        DataType::I16 => "<i2",
        DataType::I32 => "<i4",
        DataType::I64 => "<i8",
        DataType::F16 => "<f2",
        DataType::F32 | DataType::BF16 => "<f4",
        DataType::F64 => "<f8",
    };
    let dims: Vec<String> = t.shape.iter().map(i64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let pad = 64 - (10 + header.len() + 1) % 64;
    header.push_str(&" ".repeat(pad));
    header.push('\n');
    let mut f = BufWriter::new(File::create(path)?);
    f.write_all(b"\x93NUMPY\x01\x00")?;
    f.write_all(&(header.len() as u16).to_le_bytes())?;
    f.write_all(header.as_bytes())?;
    if t.data_type == DataType::BF16 {
        for v in values {
            f.write_all(&(*v as f32).to_le_bytes())?;
        }
    } else {
        f.write_all(t.data)?;
    }
    f.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_skip_non_finite_elements() {
        let s = Stats::of(&[1.0, f64::NAN, -3.0, f64::INFINITY, 2.0]);
        assert_eq!(s.min, Some(-3.0));
        assert_eq!(s.max, Some(2.0));
        assert_eq!(s.mean, Some(0.0));
        assert_eq!(s.l2, Some(14f64.sqrt()));
        assert_eq!((s.nan, s.inf), (1, 1));
        let none = Stats::of(&[f64::NAN]);
        assert_eq!((none.min, none.l2, none.nan), (None, None, 1));
    }

    #[test]
    fn bf16_and_f16_values_are_exact() {
        let b = half::bf16::from_f32(1.5).to_le_bytes();
        assert_eq!(values_f64(DataType::BF16, &b), vec![1.5]);
        let h = half::f16::from_f32(-0.25).to_le_bytes();
        assert_eq!(values_f64(DataType::F16, &h), vec![-0.25]);
    }
}
