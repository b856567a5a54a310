//! The one way this project reads YAML that users write (model.yaml, FleetX configs and their
//! `-o` values, argument specs): serde_yaml behind a nesting-depth guard.
//!
//! serde_yaml stops deserializing at [`MAX_DEPTH`] nested collections, but only after libyaml
//! has scanned the whole document, and libyaml's scanner is quadratic in the nesting depth of
//! flow collections (`[[[[…` or `{a: {a: …`): a 100,000-deep line takes tens of seconds to
//! be rejected. [`check_depth`] counts flow nesting in one linear pass first and refuses the
//! document at the line where it goes past the limit, before serde_yaml sees it. Block nesting
//! (indentation, `- - - …`) is cheap for libyaml; serde_yaml's own limit rejects it, and that
//! error is reported the same way. The limit is serde_yaml's, so nothing it accepted before is
//! refused now.

use serde::de::DeserializeOwned;

/// Most collections nested inside each other in one document: serde_yaml's fixed recursion
/// limit (it cannot be configured), applied by [`check_depth`] to flow nesting before parsing.
pub const MAX_DEPTH: usize = 128;

/// Why YAML text could not be read; the caller adds the file or origin.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    /// Nested deeper than [`MAX_DEPTH`]; `line` is where the limit was passed (1-based).
    #[error("collections nested more than {limit} levels deep (the limit)")]
    TooDeep { line: usize, limit: usize },
    /// serde_yaml's own error (syntax, types, unknown keys...).
    #[error("{0}")]
    Parse(serde_yaml::Error),
}

impl YamlError {
    /// The 1-based line the error concerns, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            YamlError::TooDeep { line, .. } => Some(*line),
            YamlError::Parse(e) => e.location().map(|l| l.line()),
        }
    }

    /// The 1-based column the error concerns, when known.
    pub fn column(&self) -> Option<usize> {
        match self {
            YamlError::TooDeep { .. } => None,
            YamlError::Parse(e) => e.location().map(|l| l.column()),
        }
    }

    /// The message without serde_yaml's trailing " at line L column C" (callers put the
    /// position in front, `file:line: message`).
    pub fn message(&self) -> String {
        let full = self.to_string();
        match full.find(" at line ") {
            Some(i) => full[..i].to_string(),
            None => full,
        }
    }
}

/// `serde_yaml::from_str` behind [`check_depth`]; serde_yaml's recursion-limit error comes
/// back as [`YamlError::TooDeep`] too.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    check_depth(text, MAX_DEPTH)?;
    serde_yaml::from_str(text).map_err(|e| {
        if e.to_string().starts_with("recursion limit exceeded") {
            YamlError::TooDeep {
                line: e.location().map(|l| l.line()).unwrap_or(1),
                limit: MAX_DEPTH,
            }
        } else {
            YamlError::Parse(e)
        }
    })
}

/// Fails when collections nest more than `limit` deep, naming the line; one linear pass.
/// Flow collections (`[`, `{`) are counted exactly; block collections by their indentation
/// columns (`- - x` and `key:` lines), which never counts more levels than there are.
/// Brackets inside quoted, plain and block scalars and comments do not count. Anything it
/// cannot make sense of is left to serde_yaml, which reports it properly.
pub fn check_depth(text: &str, limit: usize) -> Result<(), YamlError> {
    let b = text.as_bytes();
    let blank = |i: usize| i >= b.len() || matches!(b[i], b' ' | b'\t' | b'\r' | b'\n');
    let mut i = 0;
    let mut line = 1;
    let mut line_begin = 0;
    let mut flow = 0usize;
    // Columns of the open block collections, increasing (a sequence at its parent mapping's
    // column shares its entry: a lower bound).
    let mut block: Vec<usize> = Vec::new();
    // Block context: the next non-blank character begins a node (only there do `[`, `{`,
    // quotes and `|`/`>` mean what they say; inside a plain scalar they are text), and the
    // column where the current node began (a key, when `: ` follows).
    let mut node_start = true;
    let mut node_col = 0;
    // Flow context: the last significant character, to tell a node start (after `[{,:?`).
    let mut prev = b'[';
    let mut line_indent = 0;
    // Inside a block scalar (`key: |`): the indentation of the line that opened it.
    let mut block_scalar: Option<usize> = None;
    let mut line_start = true;
    // No significant character on this line yet (blank and comment lines close nothing).
    let mut fresh = true;
    let mut prev_blank = true;
    // A block collection at `col`: opens a level unless one is open there already.
    let open = |block: &mut Vec<usize>, col: usize, flow: usize, line: usize| {
        if block.last().is_none_or(|&top| top < col) {
            block.push(col);
        }
        if block.len() + flow > limit {
            return Err(YamlError::TooDeep { line, limit });
        }
        Ok(())
    };
    while i < b.len() {
        if line_start {
            line_start = false;
            prev_blank = true;
            line_begin = i;
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
            let indent = i - line_begin;
            if let Some(parent) = block_scalar {
                let empty = i >= b.len() || matches!(b[i], b'\n' | b'\r');
                if empty || indent > parent {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                block_scalar = None;
            }
            if flow == 0 {
                line_indent = indent;
                node_start = true;
                fresh = true;
                if b[i..].starts_with(b"---") && blank(i + 3) {
                    block.clear();
                    i += 3;
                }
            }
            continue;
        }
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            line_start = true;
            continue;
        }
        if matches!(c, b' ' | b'\t' | b'\r') {
            i += 1;
            prev_blank = true;
            continue;
        }
        if c == b'#' && prev_blank {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        prev_blank = false;
        if flow == 0 {
            let col = i - line_begin;
            if fresh {
                fresh = false;
                while block.last().is_some_and(|&top| top > col) {
                    block.pop();
                }
            }
            if !node_start {
                if c == b':' && blank(i + 1) {
                    open(&mut block, node_col, flow, line)?;
                    node_start = true;
                }
                i += 1;
                continue;
            }
            node_col = col;
            match c {
                b'-' | b'?' if blank(i + 1) => {
                    open(&mut block, col, flow, line)?;
                    i += 1;
                }
                b':' if blank(i + 1) => i += 1,
                b'[' | b'{' => {
                    flow = 1;
                    prev = c;
                    i += 1;
                    if block.len() + flow > limit {
                        return Err(YamlError::TooDeep { line, limit });
                    }
                }
                b'\'' | b'"' => {
                    i = skip_quoted(b, i, &mut line, &mut line_begin);
                    node_start = false;
                }
                b'|' | b'>' => {
                    block_scalar = Some(line_indent);
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                }
                // An anchor or a tag comes before the node it names.
                b'&' | b'!' => i = skip_word(b, i),
                _ => {
                    node_start = false;
                    i += 1;
                }
            }
            continue;
        }
        let at_node = matches!(prev, b'[' | b'{' | b',' | b':' | b'?');
        match c {
            b'[' | b'{' => {
                flow += 1;
                if block.len() + flow > limit {
                    return Err(YamlError::TooDeep { line, limit });
                }
            }
            b']' | b'}' => {
                flow -= 1;
                if flow == 0 {
                    node_start = false;
                }
            }
            b'\'' | b'"' if at_node => {
                i = skip_quoted(b, i, &mut line, &mut line_begin);
                prev = b'"';
                continue;
            }
            b'&' | b'!' if at_node => {
                i = skip_word(b, i);
                continue;
            }
            _ => {}
        }
        prev = c;
        i += 1;
    }
    Ok(())
}

/// Past the quoted scalar opening at `i` (`'…'` with `''` for a quote, `"…"` with `\`
/// escapes), counting the lines it spans; the end of the text when it is not closed.
fn skip_quoted(b: &[u8], mut i: usize, line: &mut usize, line_begin: &mut usize) -> usize {
    let quote = b[i];
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                *line += 1;
                *line_begin = i + 1;
            }
            b'\\' if quote == b'"' => {
                if b.get(i + 1) == Some(&b'\n') {
                    *line += 1;
                    *line_begin = i + 2;
                }
                i += 1;
            }
            b'\'' if quote == b'\'' && b.get(i + 1) == Some(&b'\'') => i += 1,
            c if c == quote => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Past the non-blank run starting at `i`.
fn skip_word(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && !matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(text: &str, limit: usize) -> bool {
        check_depth(text, limit).is_ok()
    }

    #[test]
    fn flow_nesting_is_counted_and_scalars_are_not() {
        // The top-level mapping is one level.
        assert!(depth_ok("a: [[1]]\n", 3));
        assert!(!depth_ok("a: [[[1]]]\n", 3));
        assert!(!depth_ok("a: {b: {c: [1]}}\n", 3));
        assert!(!depth_ok("[[[1]]]\n", 2));
        // Siblings do not add up.
        assert!(depth_ok("a: [[1], [2], {b: 3}]\n", 3));
        // Brackets in plain, quoted and block scalars and in comments are text.
        assert!(depth_ok("cmd: echo [[[[ {{{{\n", 1));
        assert!(depth_ok("cmd: '[[[['\nb: \"{{{{\\\"[[\"\n", 1));
        assert!(depth_ok("a: [\"[[[\", '{{{', it's]\n", 2));
        assert!(depth_ok("a: 1 # [[[[\n", 1));
        assert!(depth_ok("s: |\n  [[[[\n  {{{{\nb: [1]\n", 2));
        assert!(!depth_ok("s: |\n  [[[[\nb: [[1]]\n", 2));
        assert!(depth_ok("- &x !t [1]\n- 'a\n  [[[['\n", 2));
        // A flow collection over several lines keeps its depth across them.
        assert!(!depth_ok("a: [\n  [\n    [1]]]\n", 3));
    }

    #[test]
    fn block_nesting_is_counted_by_columns() {
        assert!(depth_ok("a:\n  b:\n    c: 1\n", 3));
        assert!(!depth_ok("a:\n  b:\n    c: 1\n", 2));
        // Comment and blank lines close nothing; a dedent does.
        assert!(!depth_ok("a:\n  b:\n# x\n\n    c: [1]\n", 3));
        assert!(depth_ok("a:\n  b:\n    c: 1\nd:\n  e: [1]\n", 3));
        // Compact sequences, and a mapping inside a sequence entry.
        assert!(!depth_ok("- - - x\n", 2));
        assert!(depth_ok("- - x\n- - y\n", 2));
        assert!(!depth_ok("- - k: v\n", 2));
        // A new document starts from the top.
        assert!(depth_ok("a:\n  b: 1\n---\nc:\n  d: 1\n", 2));
    }

    #[test]
    fn the_line_of_the_excess_is_reported() {
        let err = check_depth("a: 1\nb: [\n  [[1]]]\n", 3).unwrap_err();
        assert!(
            matches!(err, YamlError::TooDeep { line: 3, limit: 3 }),
            "{err:?}"
        );
    }
}
