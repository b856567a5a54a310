//! The `.npy` header (format versions 1–3) and the integer dtypes token files use.

/// Integer element types accepted for token ids and document lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    U8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
}

impl Dtype {
    pub fn size(self) -> usize {
        match self {
            Dtype::U8 => 1,
            Dtype::U16 | Dtype::I16 => 2,
            Dtype::U32 | Dtype::I32 => 4,
            Dtype::U64 | Dtype::I64 => 8,
        }
    }

    fn parse(descr: &str) -> Option<Dtype> {
        Some(match descr {
            "|u1" | "<u1" => Dtype::U8,
            "<u2" => Dtype::U16,
            "<i2" => Dtype::I16,
            "<u4" => Dtype::U32,
            "<i4" => Dtype::I32,
            "<u8" => Dtype::U64,
            "<i8" => Dtype::I64,
            _ => return None,
        })
    }

    /// Element `bytes[..size]` as i64 (little endian); u64 above i64::MAX saturates so the
    /// vocabulary check rejects it.
    pub fn read(self, b: &[u8]) -> i64 {
        match self {
            Dtype::U8 => i64::from(b[0]),
            Dtype::U16 => i64::from(u16::from_le_bytes([b[0], b[1]])),
            Dtype::I16 => i64::from(i16::from_le_bytes([b[0], b[1]])),
            Dtype::U32 => i64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            Dtype::I32 => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            Dtype::U64 => {
                let v = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                i64::try_from(v).unwrap_or(i64::MAX)
            }
            Dtype::I64 => i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        }
    }
}

/// A parsed header: element type, element count of the 1-D array, and where the data starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub dtype: Dtype,
    pub len: usize,
    pub data_offset: usize,
}

/// Parses the header of a 1-D, C-order, little-endian integer `.npy`; the error says what is
/// wrong in words (the caller adds the file).
pub fn parse_header(bytes: &[u8]) -> Result<Header, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (missing the \\x93NUMPY magic)".into());
    }
    let major = bytes[6];
    let (header_len, start) = match major {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err("truncated .npy header".into());
            }
            let n = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
            (n as usize, 12)
        }
        v => return Err(format!("unsupported .npy format version {v}")),
    };
    let end = start + header_len;
    let text = bytes
        .get(start..end)
        .ok_or("truncated .npy header")
        .and_then(|h| std::str::from_utf8(h).map_err(|_| "header is not text"))?;
    let field = |name: &str| -> Result<&str, String> {
        let key = format!("'{name}':");
        let at = text
            .find(&key)
            .ok_or_else(|| format!("header has no `{name}`: {text}"))?;
        Ok(text[at + key.len()..].trim_start())
    };
    let descr = field("descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or_else(|| format!("cannot read `descr` in {text}"))?;
    let dtype = Dtype::parse(descr).ok_or_else(|| {
        format!("dtype `{descr}` is not a little-endian integer type (expected <u2, <i4, <i8, ...)")
    })?;
    if field("fortran_order")?.starts_with("True") {
        return Err("Fortran-order arrays are not supported".into());
    }
    let shape = field("shape")?;
    let shape = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| format!("cannot read `shape` in {text}"))?;
    let dims: Vec<&str> = shape
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if dims.len() != 1 {
        return Err(format!("expected a 1-D array, found shape ({shape})"));
    }
    let len: usize = dims[0]
        .trim_end_matches('L')
        .parse()
        .map_err(|_| format!("bad shape ({shape})"))?;
    let need = len
        .checked_mul(dtype.size())
        .and_then(|n| n.checked_add(end))
        .ok_or("array size overflows")?;
    if bytes.len() < need {
        return Err(format!(
            "file holds {} bytes but the header promises {len} elements ({need} bytes)",
            bytes.len()
        ));
    }
    Ok(Header {
        dtype,
        len,
        data_offset: end,
    })
}

/// All elements of a 1-D integer `.npy` held in memory.
pub fn read_all(bytes: &[u8]) -> Result<Vec<i64>, String> {
    let h = parse_header(bytes)?;
    let s = h.dtype.size();
    Ok(bytes[h.data_offset..h.data_offset + h.len * s]
        .chunks_exact(s)
        .map(|c| h.dtype.read(c))
        .collect())
}

/// Writes a 1-D little-endian `.npy` (version 1) of `values` as `dtype` (`<u2`, `<i4` or
/// `<i8`); used by tests and tools that prepare small Megatron sets.
pub fn encode_i64(values: &[i64], descr: &str) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': ({},), }}",
        values.len()
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for &v in values {
        match descr {
            "<u2" => out.extend_from_slice(&(v as u16).to_le_bytes()),
            "<i4" => out.extend_from_slice(&(v as i32).to_le_bytes()),
            _ => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_each_dtype() {
        for d in ["<u2", "<i4", "<i8"] {
            let bytes = encode_i64(&[0, 7, 300, 50256], d);
            assert_eq!(read_all(&bytes).unwrap(), vec![0, 7, 300, 50256], "{d}");
            assert_eq!(
                bytes[..parse_header(&bytes).unwrap().data_offset].len() % 64,
                0
            );
        }
    }

    #[test]
    fn rejects_float_2d_and_truncated() {
        // Same-length edits of the header text, so the recorded header length stays right.
        let edit = |bytes: Vec<u8>, from: &str, to: &str| {
            let at = bytes
                .windows(from.len())
                .position(|w| w == from.as_bytes())
                .unwrap();
            let mut out = bytes;
            out[at..at + from.len()].copy_from_slice(to.as_bytes());
            out
        };
        let f = edit(encode_i64(&[1, 2], "<i4"), "<i4", "<f4");
        assert!(parse_header(&f).unwrap_err().contains("<f4"));
        let two_d = edit(encode_i64(&[1, 2], "<i8"), "(2,), }", "(1,2),}");
        assert!(parse_header(&two_d).unwrap_err().contains("1-D"));
        let full = encode_i64(&[1, 2, 3], "<i8");
        assert!(parse_header(&full[..full.len() - 1])
            .unwrap_err()
            .contains("promises 3"));
        assert!(parse_header(b"hello world").unwrap_err().contains("magic"));
    }
}
