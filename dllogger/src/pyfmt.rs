//! Numbers written the way Python's `str()` writes them, so our lines match tcap_dllogger's
//! byte for byte (`0.5533216595649719`, `3.0`, `1e-05`, `1e+16`, `nan`, `-inf`).

/// Appends Python's `repr(float)` of `x` to `out`.
///
/// `ryu` yields the shortest digits that round-trip (as Python's repr does); only the layout
/// differs: Python goes positional for decimal exponents in `-4..16`, always shows a
/// fractional part there (`3.0`), and writes exponents with a sign and two digits.
pub fn write_py_float(out: &mut Vec<u8>, x: f64) {
    if x.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    if x.is_infinite() {
        out.extend_from_slice(if x > 0.0 { b"inf" } else { b"-inf" });
        return;
    }
    let mut rb = ryu::Buffer::new();
    let s = rb.format_finite(x).as_bytes();
    let (neg, s) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    // ryu writes `123.45`, `0.00012`, `1e16` or `1.5e-7`: collect the significant digits and
    // the decimal exponent of the first one, whatever the layout.
    let epos = s.iter().position(|&c| c == b'e').unwrap_or(s.len());
    let e10: i32 = std::str::from_utf8(s.get(epos + 1..).unwrap_or(b""))
        .ok()
        .and_then(|e| e.parse().ok())
        .unwrap_or(0);
    let mant = &s[..epos];
    let point = mant.iter().position(|&c| c == b'.').unwrap_or(mant.len()) as i32;
    let mut digits = [0u8; 40];
    let mut n = 0;
    let mut lead_zeros = 0i32;
    for &c in mant.iter().filter(|c| c.is_ascii_digit()) {
        if n == 0 && c == b'0' {
            lead_zeros += 1;
        } else if n < digits.len() {
            digits[n] = c;
            n += 1;
        }
    }
    while n > 1 && digits[n - 1] == b'0' {
        n -= 1;
    }
    let exp = if n == 0 {
        digits[0] = b'0';
        n = 1;
        0
    } else {
        point - lead_zeros - 1 + e10
    };
    let d = &digits[..n];
    if neg {
        out.push(b'-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if d.len() <= int_len {
                out.extend_from_slice(d);
                out.extend(std::iter::repeat_n(b'0', int_len - d.len()));
                out.extend_from_slice(b".0");
            } else {
                out.extend_from_slice(&d[..int_len]);
                out.push(b'.');
                out.extend_from_slice(&d[int_len..]);
            }
        } else {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-exp - 1) as usize));
            out.extend_from_slice(d);
        }
    } else {
        out.push(d[0]);
        if d.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&d[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(itoa_buf(a as u64).as_slice());
    }
}

/// Small integer formatting without going through `core::fmt`.
pub struct IntBuf {
    buf: [u8; 20],
    start: usize,
}

impl IntBuf {
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

/// Decimal digits of `v`.
pub fn itoa_buf(mut v: u64) -> IntBuf {
    let mut b = IntBuf {
        buf: [0; 20],
        start: 20,
    };
    loop {
        b.start -= 1;
        b.buf[b.start] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    b
}

/// Appends Python's `str(int)` of `v`.
pub fn write_int(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(itoa_buf(v.unsigned_abs()).as_slice());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(x: f64) -> String {
        let mut v = Vec::new();
        write_py_float(&mut v, x);
        String::from_utf8(v).unwrap()
    }

    /// Expected strings produced by CPython 3 `repr(float)`.
    #[test]
    fn matches_python_repr() {
        let cases: &[(f64, &str)] = &[
            (0.5533216595649719, "0.5533216595649719"),
            (23350.335421016007, "23350.335421016007"),
            (3.0, "3.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (6e-6, "6e-06"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123.456, "123.456"),
            (-2.5, "-2.5"),
            (1751620651.86237, "1751620651.86237"),
            (1e300, "1e+300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "5e-324"),
            (0.1, "0.1"),
            (100.0, "100.0"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (0.553_321_66_f32 as f64, "0.5533216595649719"),
        ];
        for (x, want) in cases {
            assert_eq!(py(*x), *want, "repr({x:e})");
        }
    }

    #[test]
    fn ints() {
        for (v, want) in [
            (0i64, "0"),
            (3, "3"),
            (-17, "-17"),
            (i64::MIN, "-9223372036854775808"),
        ] {
            let mut out = Vec::new();
            write_int(&mut out, v);
            assert_eq!(out, want.as_bytes());
        }
    }

    proptest::proptest! {
        #[test]
        fn round_trips(bits in proptest::num::u64::ANY) {
            let x = f64::from_bits(bits);
            let s = py(x);
            let back: f64 = s.parse().unwrap();
            if x.is_nan() { proptest::prop_assert!(back.is_nan()); }
            else { proptest::prop_assert_eq!(back.to_bits(), x.to_bits(), "{}", s); }
        }
    }
}
