//! Just enough Python lexing for the rewrites to check themselves: which physical lines start
//! a statement (not inside a string, brackets or a `\` continuation), their indentation, and
//! the names the code refers to (outside strings and comments; names inside f-string braces
//! count). Conservative by design: when in doubt a word counts as a reference, so a check
//! built on it refuses a rewrite rather than letting one through that leaves a name undefined.

/// One physical line of a Python file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineInfo {
    /// Starts inside a (triple-quoted) string literal.
    pub in_string: bool,
    /// Starts inside brackets or after a `\` continuation.
    pub continued: bool,
    /// Blank or only a comment.
    pub blank: bool,
    /// Leading whitespace width (a tab counts as up to the next multiple of 8).
    pub indent: usize,
    /// A `def`/`async def`/`class` header or a decorator.
    pub def_header: bool,
}

impl LineInfo {
    /// A line that begins a statement: not a string's or an expression's continuation, not blank.
    pub fn statement(&self) -> bool {
        !self.in_string && !self.continued && !self.blank
    }
}

/// A name the code mentions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    pub text: String,
    /// 1-based line.
    pub line: usize,
    /// Preceded by `.` (an attribute, not a variable).
    pub attr: bool,
    /// `name=` inside brackets: a keyword argument or parameter default, not a reference.
    pub kwarg: bool,
}

impl Name {
    /// Whether this mention reads or binds the variable `name` (not an attribute or keyword).
    pub fn is_variable(&self, name: &str) -> bool {
        !self.attr && !self.kwarg && self.text == name
    }
}

/// The lexed view of a file.
#[derive(Debug, Clone, Default)]
pub struct Lexed {
    /// Per physical line (index 0 is line 1).
    pub lines: Vec<LineInfo>,
    pub names: Vec<Name>,
}

impl Lexed {
    /// Whether 1-based `line` begins a statement.
    pub fn statement(&self, line: usize) -> bool {
        line >= 1 && self.lines.get(line - 1).is_some_and(|l| l.statement())
    }

    /// 1-based lines where the variable `name` is used (read or bound).
    pub fn variable_lines(&self, name: &str) -> Vec<usize> {
        let mut lines: Vec<usize> = self
            .names
            .iter()
            .filter(|n| n.is_variable(name))
            .map(|n| n.line)
            .collect();
        lines.dedup();
        lines
    }

    /// Whether the statement on 1-based line `def` runs on every path that reaches line `use_`:
    /// `use_` comes later, in the same block or one nested in it (no line in between is
    /// indented less than `def`), and no function or class starts in between (a body that
    /// runs at another time).
    pub fn dominates(&self, def: usize, use_: usize) -> bool {
        if def == 0 || use_ <= def || use_ > self.lines.len() {
            return false;
        }
        let k = self.lines[def - 1].indent;
        for l in def + 1..=use_ {
            let info = &self.lines[l - 1];
            if !info.statement() {
                continue;
            }
            if info.indent < k || (l < use_ && info.def_header) {
                return false;
            }
        }
        true
    }
}

fn indent_width(line: &str) -> usize {
    let mut w = 0;
    for c in line.chars() {
        match c {
            ' ' => w += 1,
            '\t' => w = (w / 8 + 1) * 8,
            '\x0c' => w = 0,
            _ => break,
        }
    }
    w
}

fn is_string_prefix(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "r" | "u" | "b" | "f" | "br" | "rb" | "fr" | "rf"
    )
}

/// Lexes Python source. Never fails: unterminated strings or brackets run to the end.
pub fn lex(text: &str) -> Lexed {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Lexed::default();
    let mut line = 1usize;
    // Per-line start state, filled in as each line begins.
    let mut starts: Vec<(bool, bool)> = vec![(false, false)];
    let mut depth: usize = 0;
    let mut backslash = false;
    // The last significant character outside strings/comments (for `.name`).
    let mut prev_sig: Option<char> = None;
    let mut i = 0;
    let n = chars.len();

    while i < n {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            starts.push((false, depth > 0 || backslash));
            backslash = false;
            i += 1;
            continue;
        }
        if c == '\\' {
            // Only meaningful before a newline (a line continuation).
            backslash = chars.get(i + 1) == Some(&'\n')
                || (chars.get(i + 1) == Some(&'\r') && chars.get(i + 2) == Some(&'\n'));
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        backslash = false;
        if c == '#' {
            while i < n && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_digit() {
            while i < n && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.') {
                i += 1;
            }
            prev_sig = Some('0');
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let s = i;
            while i < n && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[s..i].iter().collect();
            if i < n && (chars[i] == '\'' || chars[i] == '"') && is_string_prefix(&word) {
                let fstring = word.to_ascii_lowercase().contains('f');
                i = string(&chars, i, fstring, &mut line, &mut starts, &mut out);
                prev_sig = Some('"');
                continue;
            }
            push_name(&chars, &mut out, s, i, line, prev_sig, depth);
            prev_sig = Some('a');
            continue;
        }
        if c == '\'' || c == '"' {
            i = string(&chars, i, false, &mut line, &mut starts, &mut out);
            prev_sig = Some('"');
            continue;
        }
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        prev_sig = Some(c);
        i += 1;
    }

    for (idx, physical) in text.split('\n').enumerate() {
        let (in_string, continued) = starts.get(idx).copied().unwrap_or_default();
        let trimmed = physical.trim();
        let first_word = trimmed
            .split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
            .next()
            .unwrap_or("");
        out.lines.push(LineInfo {
            in_string,
            continued,
            blank: trimmed.is_empty() || trimmed.starts_with('#'),
            indent: indent_width(physical),
            def_header: matches!(first_word, "def" | "class")
                || trimmed.starts_with("async def")
                || trimmed.starts_with('@'),
        });
    }
    // A trailing newline does not start another line.
    if text.ends_with('\n') {
        out.lines.pop();
    }
    out
}

/// Records the name at `chars[s..e]` on `line`.
fn push_name(
    chars: &[char],
    out: &mut Lexed,
    s: usize,
    e: usize,
    line: usize,
    prev: Option<char>,
    depth: usize,
) {
    let mut j = e;
    while j < chars.len() && (chars[j] == ' ' || chars[j] == '\t') {
        j += 1;
    }
    let kwarg = depth > 0 && chars.get(j) == Some(&'=') && chars.get(j + 1) != Some(&'=');
    out.names.push(Name {
        text: chars[s..e].iter().collect(),
        line,
        attr: prev == Some('.'),
        kwarg,
    });
}

/// Skips the string literal whose opening quote is at `i`; returns the index after it.
/// In f-strings, names inside `{...}` are recorded.
fn string(
    chars: &[char],
    mut i: usize,
    fstring: bool,
    line: &mut usize,
    starts: &mut Vec<(bool, bool)>,
    out: &mut Lexed,
) -> usize {
    let n = chars.len();
    let q = chars[i];
    let triple = chars.get(i + 1) == Some(&q) && chars.get(i + 2) == Some(&q);
    i += if triple { 3 } else { 1 };
    while i < n {
        let c = chars[i];
        if c == '\\' {
            if chars.get(i + 1) == Some(&'\n') {
                *line += 1;
                starts.push((true, false));
            }
            i += 2;
            continue;
        }
        if c == '\n' {
            if !triple {
                // Unterminated: the string ends with the line.
                return i;
            }
            *line += 1;
            starts.push((true, false));
            i += 1;
            continue;
        }
        if c == q {
            if !triple {
                return i + 1;
            }
            if chars.get(i + 1) == Some(&q) && chars.get(i + 2) == Some(&q) {
                return i + 3;
            }
        }
        if fstring && c == '{' {
            if chars.get(i + 1) == Some(&'{') {
                i += 2;
                continue;
            }
            // An expression: every word in it counts (nested strings included — conservative).
            let mut braces = 1usize;
            let mut prev: Option<char> = Some('{');
            i += 1;
            while i < n && braces > 0 {
                let c = chars[i];
                if c == q && !triple {
                    return i + 1;
                }
                if c == '\n' {
                    if !triple {
                        return i;
                    }
                    *line += 1;
                    starts.push((true, false));
                } else if c == '{' {
                    braces += 1;
                } else if c == '}' {
                    braces -= 1;
                } else if c.is_alphabetic() || c == '_' {
                    let s = i;
                    while i < n && (chars[i].is_alphanumeric() || chars[i] == '_') {
                        i += 1;
                    }
                    push_name(chars, out, s, i, *line, prev, 1);
                    prev = Some('a');
                    continue;
                }
                if !c.is_whitespace() {
                    prev = Some(c);
                }
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    i
}

/// Whether byte offset `pos` of a single `line` (that starts outside any string) is code: not
/// inside a quoted string or a `#` comment on that line.
pub fn in_code(line: &str, pos: usize) -> bool {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if i >= pos {
            return quote.is_none();
        }
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some(_), '\\') => escaped = true,
            (None, '#') => return false,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    quote.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docstrings_and_continuations_are_not_statements() {
        let src = "\"\"\"Usage:\n    import torch\n\"\"\"\nx = f(a,\n      b)\ny = 1 + \\\n    2\nimport torch\n";
        let l = lex(src);
        let stmts: Vec<usize> = (1..=l.lines.len()).filter(|&i| l.statement(i)).collect();
        assert_eq!(stmts, vec![1, 4, 6, 8]);
    }

    #[test]
    fn names_skip_strings_comments_attributes_and_keywords() {
        let src = "x = o.a(y, amp=1)  # amp\ns = 'amp' + obj.amp\nf'{amp.x}'\n";
        let l = lex(src);
        assert_eq!(l.variable_lines("amp"), vec![3]);
        assert_eq!(l.variable_lines("y"), vec![1]);
    }

    #[test]
    fn dominance_follows_blocks_and_function_bodies() {
        let src = "def f():\n    if a:\n        s = 1\n    s.x()\n    s = 2\n    for i in r:\n        s.y()\ndef g():\n    s.z()\n";
        let l = lex(src);
        assert!(!l.dominates(3, 4));
        assert!(l.dominates(5, 7));
        assert!(!l.dominates(5, 9));
    }
}
