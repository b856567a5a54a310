//! The dump writer: one training step's captured tensors as `DIR/rank<r>/step<N>/` in the
//! modelzoo dump format, version 1 (docs/diff.md): `records.jsonl` (one record per tensor, in
//! execution order: statistics in float64 over the finite elements, NaN/Inf counts, a CRC-32 of
//! the bytes), with `full` one `.npy` per record under `tensors/`, and `meta.json` written last
//! and atomically, so a dump without it did not finish.

use std::collections::HashMap;
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
    /// Statistics and checksum of each tracked tensor, for its repeats.
    known: HashMap<u64, (Stats, String)>,
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
            known: HashMap::new(),
            error: None,
        })
    }

    /// The step directory written.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write(&mut self, t: &Captured<'_>) -> Result<(), DumpError> {
        let (stats, checksum) = match (t.repeat, t.tensor_id) {
            (true, Some(id)) => self.known.get(&id).cloned().ok_or_else(|| {
                io(&self.dir)(std::io::Error::other(format!(
                    "internal: {} repeats tensor {id}, which was never written",
                    t.op
                )))
            })?,
            _ => (
                Stats::of(t.data_type, t.data),
                format!("crc32:{:08x}", crc32fast::hash(t.data)),
            ),
        };
        if let (false, Some(id)) = (t.repeat, t.tensor_id) {
            self.known.insert(id, (stats.clone(), checksum.clone()));
        }
        let phase = if t.backward { "backward" } else { "forward" };
        let io_name = if t.output { "output" } else { "input" };
        let file = if self.full {
            let short = t.op.rsplit("::").next().unwrap_or(t.op);
            let name = format!("{:06}_{short}.npy", self.seq);
            let path = self.dir.join("tensors").join(&name);
            write_npy(&path, t).map_err(io(&path))?;
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
            checksum,
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
        let path = self.dir.join("meta.json");
        let text = serde_json::to_string_pretty(meta).map_err(|e| io(&path)(e.into()))?;
        modelzoo_support::write_atomic(&path, text.as_bytes()).map_err(io(&path))?;
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

/// Decode `data` (elements of `ty`) into `out` as float64 (exact for every type written);
/// returns how many elements were decoded (`data` must hold at most `out.len()`).
fn decode(ty: DataType, data: &[u8], out: &mut [f64]) -> usize {
    fn each<const N: usize>(data: &[u8], out: &mut [f64], f: impl Fn([u8; N]) -> f64) -> usize {
        let mut n = 0;
        for (o, c) in out.iter_mut().zip(data.chunks_exact(N)) {
            *o = f(c.try_into().expect("chunks_exact gives N bytes"));
            n += 1;
        }
        n
    }
    match ty {
        DataType::U8 => each(data, out, |[b]| f64::from(b)),
        DataType::Bool => each(data, out, |[b]| f64::from(u8::from(b != 0))),
        DataType::I8 => each(data, out, |[b]| f64::from(b as i8)),
        DataType::I16 => each(data, out, |b| f64::from(i16::from_le_bytes(b))),
        DataType::I32 => each(data, out, |b| f64::from(i32::from_le_bytes(b))),
        DataType::I64 => each(data, out, |b| i64::from_le_bytes(b) as f64),
        DataType::F16 => each(data, out, |b| half::f16::from_le_bytes(b).to_f64()),
        DataType::BF16 => each(data, out, |b| half::bf16::from_le_bytes(b).to_f64()),
        DataType::F32 => each(data, out, |b| f64::from(f32::from_le_bytes(b))),
        DataType::F64 => each(data, out, f64::from_le_bytes),
    }
}

/// Elements decoded per block: a stack buffer, so statistics never allocate.
const BLOCK: usize = 1024;

/// Calls `f` with the elements of `data` as float64, a block at a time, in order.
fn for_blocks(ty: DataType, data: &[u8], mut f: impl FnMut(&[f64])) {
    let mut buf = [0f64; BLOCK];
    for chunk in data.chunks(BLOCK * ty.size()) {
        let n = decode(ty, chunk, &mut buf);
        f(&buf[..n]);
    }
}

/// min / max / mean / L2 norm over the finite elements; NaN and ±Inf counts.
#[derive(Debug, Clone, PartialEq)]
struct Stats {
    min: Option<f64>,
    max: Option<f64>,
    mean: Option<f64>,
    l2: Option<f64>,
    nan: u64,
    inf: u64,
}

/// Running sums over finite values in four lanes, so the loop over a block vectorizes.
struct Acc {
    min: [f64; 4],
    max: [f64; 4],
    sum: [f64; 4],
    sq: [f64; 4],
    n: u64,
    nan: u64,
    inf: u64,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            min: [f64::INFINITY; 4],
            max: [f64::NEG_INFINITY; 4],
            sum: [0.0; 4],
            sq: [0.0; 4],
            n: 0,
            nan: 0,
            inf: 0,
        }
    }

    fn lane(&mut self, l: usize, v: f64) {
        self.min[l] = if v < self.min[l] { v } else { self.min[l] };
        self.max[l] = if v > self.max[l] { v } else { self.max[l] };
        self.sum[l] += v;
        self.sq[l] += v * v;
    }

    fn add(&mut self, block: &[f64]) {
        if !block.iter().all(|v| v.is_finite()) {
            for &v in block {
                if v.is_nan() {
                    self.nan += 1;
                } else if v.is_infinite() {
                    self.inf += 1;
                } else {
                    self.lane(0, v);
                    self.n += 1;
                }
            }
            return;
        }
        let quads = block.chunks_exact(4);
        for &v in quads.remainder() {
            self.lane(0, v);
        }
        for q in quads {
            for (l, &v) in q.iter().enumerate() {
                self.lane(l, v);
            }
        }
        self.n += block.len() as u64;
    }

    fn stats(&self) -> Stats {
        let some = |v: f64| (self.n > 0).then_some(v);
        let fold = |a: &[f64; 4], f: fn(f64, f64) -> f64| a.iter().copied().fold(a[0], f);
        let sum: f64 = self.sum.iter().sum();
        Stats {
            min: some(fold(&self.min, f64::min)),
            max: some(fold(&self.max, f64::max)),
            mean: some(sum / self.n.max(1) as f64),
            l2: some(self.sq.iter().sum::<f64>().sqrt()),
            nan: self.nan,
            inf: self.inf,
        }
    }
}

/// float32 in eight lanes without widening min/max (exact in float32): the common case, and
/// most of a dump's bytes, kept to about one memory pass.
struct AccF32 {
    min: [f32; 8],
    max: [f32; 8],
    sum: [f64; 8],
    sq: [f64; 8],
}

impl AccF32 {
    fn new() -> AccF32 {
        AccF32 {
            min: [f32::INFINITY; 8],
            max: [f32::NEG_INFINITY; 8],
            sum: [0.0; 8],
            sq: [0.0; 8],
        }
    }

    /// Add an all-finite block (its length a multiple of 8).
    fn add(&mut self, block: &[f32]) {
        for o in block.chunks_exact(8) {
            for (l, &v) in o.iter().enumerate() {
                self.min[l] = if v < self.min[l] { v } else { self.min[l] };
                self.max[l] = if v > self.max[l] { v } else { self.max[l] };
                let w = f64::from(v);
                self.sum[l] += w;
                self.sq[l] += w * w;
            }
        }
    }

    fn merge_into(&self, acc: &mut Acc) {
        for l in 0..8 {
            let k = l % 4;
            acc.min[k] = acc.min[k].min(f64::from(self.min[l]));
            acc.max[k] = acc.max[k].max(f64::from(self.max[l]));
            acc.sum[k] += self.sum[l];
            acc.sq[k] += self.sq[l];
        }
    }
}

impl Stats {
    fn of(ty: DataType, data: &[u8]) -> Stats {
        let mut acc = Acc::new();
        if ty == DataType::F32 {
            // SAFETY: every bit pattern is an f32; align_to leaves unaligned ends outside.
            let (head, floats, tail) = unsafe { data.align_to::<f32>() };
            if head.is_empty() && tail.is_empty() {
                let mut fast = AccF32::new();
                for block in floats.chunks(BLOCK) {
                    let even = block.len() - block.len() % 8;
                    if block.iter().all(|v| v.is_finite()) {
                        fast.add(&block[..even]);
                        acc.n += even as u64;
                        let rest: Vec<f64> = block[even..].iter().map(|&v| f64::from(v)).collect();
                        acc.add(&rest);
                    } else {
                        let wide: Vec<f64> = block.iter().map(|&v| f64::from(v)).collect();
                        acc.add(&wide);
                    }
                }
                fast.merge_into(&mut acc);
                return acc.stats();
            }
        }
        for_blocks(ty, data, |b| acc.add(b));
        acc.stats()
    }
}

/// NumPy format 1.0, C order, little-endian: the tensor's own bytes, bfloat16 as float32.
fn write_npy(path: &Path, t: &Captured<'_>) -> std::io::Result<()> {
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
        let mut result = Ok(());
        for_blocks(t.data_type, t.data, |b| {
            for v in b {
                if result.is_ok() {
                    result = f.write_all(&(*v as f32).to_le_bytes());
                }
            }
        });
        result?;
    } else {
        f.write_all(t.data)?;
    }
    f.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64_bytes(v: &[f64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn stats_skip_non_finite_elements() {
        let s = Stats::of(
            DataType::F64,
            &f64_bytes(&[1.0, f64::NAN, -3.0, f64::INFINITY, 2.0]),
        );
        assert_eq!(s.min, Some(-3.0));
        assert_eq!(s.max, Some(2.0));
        assert_eq!(s.mean, Some(0.0));
        assert_eq!(s.l2, Some(14f64.sqrt()));
        assert_eq!((s.nan, s.inf), (1, 1));
        let none = Stats::of(DataType::F64, &f64_bytes(&[f64::NAN]));
        assert_eq!((none.min, none.l2, none.nan), (None, None, 1));
    }

    #[test]
    fn stats_over_many_blocks_match_a_plain_loop() {
        let v: Vec<f64> = (0..5 * BLOCK + 7)
            .map(|i| ((i * 37) % 101) as f64 - 50.0)
            .collect();
        let s = Stats::of(DataType::F64, &f64_bytes(&v));
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        assert_eq!((s.min, s.max), (Some(-50.0), Some(50.0)));
        assert!((s.mean.unwrap() - mean).abs() < 1e-12);
        let l2 = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((s.l2.unwrap() - l2).abs() < 1e-9 * l2);
    }

    #[test]
    fn the_float32_path_agrees_with_the_general_one() {
        let v: Vec<f32> = (0..3 * BLOCK + 5)
            .map(|i| ((i * 29) % 97) as f32 * 0.25 - 12.0)
            .collect();
        let mut bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let wide: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
        let want = Stats::of(DataType::F64, &f64_bytes(&wide));
        let got = Stats::of(DataType::F32, &bytes);
        assert_eq!((got.min, got.max), (want.min, want.max));
        assert!((got.mean.unwrap() - want.mean.unwrap()).abs() < 1e-12);
        assert!((got.l2.unwrap() - want.l2.unwrap()).abs() < 1e-9);
        bytes[8..12].copy_from_slice(&f32::NAN.to_le_bytes());
        let with_nan = Stats::of(DataType::F32, &bytes);
        assert_eq!(with_nan.nan, 1);
        assert_eq!(with_nan.min, want.min);
    }

    #[test]
    fn bf16_and_f16_values_are_exact() {
        let mut out = [0.0; 2];
        let b = half::bf16::from_f32(1.5).to_le_bytes();
        assert_eq!(decode(DataType::BF16, &b, &mut out), 1);
        assert_eq!(out[0], 1.5);
        let h = half::f16::from_f32(-0.25).to_le_bytes();
        decode(DataType::F16, &h, &mut out);
        assert_eq!(out[0], -0.25);
    }
}
