//! NumPy `.npy` files (format versions 1–3, little-endian, C order), memory-mapped and decoded
//! to f64 in chunks: a dump's full tensors are read once, without copying the file into memory.
//!
//! The dtypes a dump holds: float16/32/64, int8/16/32/64, uint8, bool. NumPy has no bfloat16,
//! so the probe writes bfloat16 tensors as float32 (exactly representable).

use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::DiffError;

/// Element type of an .npy file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dtype {
    F16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    Bool,
}

impl Dtype {
    fn parse(descr: &str) -> Option<Dtype> {
        Some(match descr {
            "<f2" => Dtype::F16,
            "<f4" => Dtype::F32,
            "<f8" => Dtype::F64,
            "|i1" | "<i1" => Dtype::I8,
            "<i2" => Dtype::I16,
            "<i4" => Dtype::I32,
            "<i8" => Dtype::I64,
            "|u1" | "<u1" => Dtype::U8,
            "|b1" => Dtype::Bool,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Dtype::I8 | Dtype::U8 | Dtype::Bool => 1,
            Dtype::F16 | Dtype::I16 => 2,
            Dtype::F32 | Dtype::I32 => 4,
            Dtype::F64 | Dtype::I64 => 8,
        }
    }
}

/// An open .npy file: its shape and its data, mapped.
pub struct Npy {
    path: PathBuf,
    map: Mmap,
    offset: usize,
    dtype: Dtype,
    pub shape: Vec<u64>,
    len: usize,
}

impl Npy {
    /// Open and check `path`: a valid header, a dtype this reader knows, C order, and as many
    /// bytes as the header's shape needs (a truncated file is refused here, not mid-diff).
    pub fn open(path: &Path) -> Result<Npy, DiffError> {
        let bad = |message: String| DiffError::Tensor {
            path: path.to_path_buf(),
            message,
        };
        let file = super::dump::open_regular(path).map_err(bad)?;
        let file_len = file.metadata().map_err(|e| bad(e.to_string()))?.len();
        if file_len < 10 {
            return Err(bad(format!(
                "truncated: {file_len} bytes, less than an .npy header"
            )));
        }
        // SAFETY: the map is read-only and lives as long as `Npy`. A dump is not written while
        // it is diffed; were the file shortened meanwhile, reads could fault — the same
        // contract every mmap reader (numpy's mmap_mode included) has.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| bad(format!("cannot map: {e}")))?;
        if &map[..6] != b"\x93NUMPY" {
            return Err(bad("not an .npy file (no \\x93NUMPY magic)".into()));
        }
        let (header_len, start) = match map[6] {
            1 => (u16::from_le_bytes([map[8], map[9]]) as usize, 10),
            2 | 3 if map.len() >= 12 => (
                u32::from_le_bytes([map[8], map[9], map[10], map[11]]) as usize,
                12,
            ),
            v => return Err(bad(format!("unsupported .npy format version {v}"))),
        };
        let offset = start + header_len;
        let header = map
            .get(start..offset)
            .ok_or_else(|| bad("truncated inside the header".into()))?;
        let header = std::str::from_utf8(header).map_err(|_| bad("header is not text".into()))?;
        let descr = dict_value(header, "descr")
            .map(|v| v.trim_matches(|c| c == '\'' || c == '"'))
            .ok_or_else(|| bad(format!("header has no 'descr': {header}")))?;
        let dtype = Dtype::parse(descr).ok_or_else(|| {
            bad(format!(
                "dtype `{descr}` is not one a dump holds (float16/32/64, int8–64, uint8, bool; little-endian)"
            ))
        })?;
        if dict_value(header, "fortran_order").is_some_and(|v| v.starts_with("True")) {
            return Err(bad(
                "Fortran-ordered array: dumps hold C-ordered tensors".into()
            ));
        }
        let shape = parse_shape(header).ok_or_else(|| bad(format!("bad 'shape' in {header}")))?;
        let len = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))
            .ok_or_else(|| bad("shape too large".into()))?;
        let need = len
            .checked_mul(dtype.size())
            .and_then(|n| n.checked_add(offset))
            .ok_or_else(|| bad("shape too large".into()))?;
        if map.len() < need {
            return Err(bad(format!(
                "truncated: the header's shape {shape:?} of {descr} needs {need} bytes, the file holds {}",
                map.len()
            )));
        }
        Ok(Npy {
            path: path.to_path_buf(),
            map,
            offset,
            dtype,
            shape,
            len,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The file this tensor came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Decode elements `start .. start + out.len()` into `out` as f64.
    pub fn read_f64(&self, start: usize, out: &mut [f64]) {
        let size = self.dtype.size();
        let bytes = &self.map[self.offset + start * size..self.offset + (start + out.len()) * size];
        macro_rules! decode {
            ($t:ty, $n:expr) => {
                for (o, b) in out.iter_mut().zip(bytes.chunks_exact($n)) {
                    *o = <$t>::from_le_bytes(b.try_into().unwrap_or_default()) as f64;
                }
            };
        }
        match self.dtype {
            Dtype::F16 => {
                for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                    *o = half::f16::from_le_bytes([b[0], b[1]]).to_f64();
                }
            }
            Dtype::F32 => decode!(f32, 4),
            Dtype::F64 => decode!(f64, 8),
            Dtype::I8 => decode!(i8, 1),
            Dtype::I16 => decode!(i16, 2),
            Dtype::I32 => decode!(i32, 4),
            Dtype::I64 => decode!(i64, 8),
            Dtype::U8 | Dtype::Bool => decode!(u8, 1),
        }
    }
}

/// The text after `'key':` in the header dict, up to the end of the dict.
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header
        .find(&format!("'{key}'"))
        .or_else(|| header.find(&format!("\"{key}\"")))?;
    let rest = &header[at + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

fn parse_shape(header: &str) -> Option<Vec<u64>> {
    let at = header
        .find("'shape'")
        .or_else(|| header.find("\"shape\""))?;
    let rest = &header[at..];
    let open = rest.find('(')?;
    let close = rest[open..].find(')')? + open;
    rest[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse().ok())
        .collect()
}
