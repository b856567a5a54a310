//! A cursor over Python `repr` text: tcap_dllogger's `data` strings and PARAMETER records,
//! and dict prints on a console (`{'loss': 0.1, 'epoch': 0.5}`).

use std::borrow::Cow;

use super::ParseError;

/// A cursor over a Python `repr` of a dict.
pub(super) struct PyScanner<'a> {
    pub(super) b: &'a [u8],
    pub(super) i: usize,
}

impl<'a> PyScanner<'a> {
    pub(super) fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    pub(super) fn next(&mut self) -> Option<u8> {
        let c = self.peek();
        self.i += c.is_some() as usize;
        c
    }
    pub(super) fn ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    /// A Python string literal in `'...'` or `"..."`, escapes resolved (enough for keys and
    /// numbers: `\\`, `\'`, `\"`, `\n`, `\t`, `\r`, `\xNN`; others are kept as written).
    pub(super) fn string(&mut self) -> Result<Cow<'a, [u8]>, ParseError> {
        let q = self.next().ok_or(ParseError::EndOfLine)?;
        if q != b'\'' && q != b'"' {
            return Err(ParseError::Expected(b'\''));
        }
        let b: &'a [u8] = self.b;
        let rest = &b[self.i..];
        let end = memchr::memchr2(q, b'\\', rest).ok_or(ParseError::EndOfLine)?;
        if rest[end] == q {
            self.i += end + 1;
            return Ok(Cow::Borrowed(&rest[..end]));
        }
        let mut out = rest[..end].to_vec();
        self.i += end;
        loop {
            match self.next().ok_or(ParseError::EndOfLine)? {
                c if c == q => return Ok(Cow::Owned(out)),
                b'\\' => match self.next().ok_or(ParseError::EndOfLine)? {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'x' => {
                        let h = self
                            .b
                            .get(self.i..self.i + 2)
                            .ok_or(ParseError::EndOfLine)?;
                        let v = std::str::from_utf8(h)
                            .ok()
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                            .ok_or(ParseError::BadEscape)?;
                        out.push(v);
                        self.i += 2;
                    }
                    c @ (b'\\' | b'\'' | b'"') => out.push(c),
                    c => {
                        out.push(b'\\');
                        out.push(c);
                    }
                },
                c => out.push(c),
            }
        }
    }

    /// An unquoted value (`2.16`, `None`, `tensor(2.16, device='sdaa:0')`, `[1, 2]`): up to the
    /// next `,` or `}` outside brackets and quotes.
    pub(super) fn bare(&mut self) -> Result<(), ParseError> {
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' if depth > 0 => depth -= 1,
                b',' | b'}' if depth == 0 => return Ok(()),
                b'\'' | b'"' => {
                    self.string()?;
                    continue;
                }
                _ => {}
            }
            self.i += 1;
        }
        Err(ParseError::EndOfLine)
    }
}
