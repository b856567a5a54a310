//! Just enough Python lexing for the rules to tell code from prose and for the rewrites to check
//! themselves: which physical lines start a statement (not inside a string, brackets or a `\`
//! continuation), their indentation, the names the code refers to (outside strings and
//! comments; names inside f-string braces count), every string literal (its value, and whether
//! it is a docstring), and a *code view* of the file — the text with string contents and
//! comments blanked, byte for byte — so a pattern run over it matches code only, at the offsets
//! of the real text.
//!
//! One pass over the bytes, so linear in the file (a tokenizer is all the rules need; a syntax
//! tree would add nothing they use). Conservative by design: when in doubt a word counts as a
//! reference, so a check built on it refuses a rewrite rather than letting one through that
//! leaves a name undefined.

use std::cell::OnceCell;
use std::ops::Range;

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

/// A string literal of the code (not one nested in an f-string's braces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrLit {
    /// Byte range of the text between its quotes (an f-string's `{…}` parts included).
    pub value: Range<usize>,
    /// 1-based line the literal starts on.
    pub line: usize,
    /// An f-string (`f"…"`, `rf'…'`, …).
    pub fstring: bool,
    /// A bytes literal (`b"…"`).
    pub bytes: bool,
    /// A statement that is only string literals: a docstring (or prose of the same kind).
    pub docstring: bool,
}

/// The lexed view of a file.
#[derive(Debug, Clone, Default)]
pub struct Lexed {
    /// Per physical line (index 0 is line 1).
    pub lines: Vec<LineInfo>,
    pub names: Vec<Name>,
    /// The text with every string literal's contents (an f-string's literal parts; its `{…}`
    /// expressions stay) and every comment replaced by spaces, newlines kept: the same length
    /// and line breaks as the text, so a match in it is code at the same byte offsets.
    pub code: String,
    /// Every string literal, in order.
    pub strings: Vec<StrLit>,
    /// Byte offset where each physical line starts.
    pub line_starts: Vec<usize>,
    /// Block structure for [`Lexed::dominates`], built on first use.
    dom: OnceCell<Dominance>,
}

/// For each line, where the block that a statement on it opens ends (see [`Lexed::dominates`]).
#[derive(Debug, Clone, Default)]
struct Dominance {
    /// 1-based: the first statement line after this one indented less (`len + 1` if none).
    first_lower: Vec<usize>,
    /// 1-based: the first statement line after this one that starts a function, class or
    /// decorator (`len + 1` if none).
    first_header: Vec<usize>,
}

impl Lexed {
    /// Whether 1-based `line` begins a statement.
    pub fn statement(&self, line: usize) -> bool {
        line >= 1 && self.lines.get(line - 1).is_some_and(|l| l.statement())
    }

    /// The code view (see [`Lexed::code`]) of 0-based line `idx`, with its line ending.
    pub fn code_line(&self, idx: usize) -> &str {
        let start = self
            .line_starts
            .get(idx)
            .copied()
            .unwrap_or(self.code.len());
        let end = self
            .line_starts
            .get(idx + 1)
            .copied()
            .unwrap_or(self.code.len());
        self.code.get(start..end).unwrap_or("")
    }

    /// 0-based line holding byte offset `pos`.
    pub fn line_of(&self, pos: usize) -> usize {
        self.line_starts
            .partition_point(|&s| s <= pos)
            .saturating_sub(1)
    }

    /// 1-based lines where the variable `name` is used (read or bound).
    pub fn variable_lines(&self, name: &str) -> Vec<usize> {
        crate::meter::add(self.names.len() as u64);
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
    /// `use_` comes later, in the same block or one nested in it (no statement in between, nor
    /// `use_` itself, is indented less than `def`), and no function or class starts in between
    /// (a body that runs at another time). Constant time once the block structure is built
    /// (linear, on the first call), so checking every use against its definitions stays linear.
    pub fn dominates(&self, def: usize, use_: usize) -> bool {
        if def == 0 || use_ <= def || use_ > self.lines.len() {
            return false;
        }
        self.reach(def) >= use_
    }

    /// The last 1-based line the statement on `def` dominates (`def` itself when none).
    pub fn reach(&self, def: usize) -> usize {
        if def == 0 || def > self.lines.len() {
            return def;
        }
        let dom = self.dom.get_or_init(|| self.dominance());
        (dom.first_lower[def - 1] - 1).min(dom.first_header[def - 1])
    }

    fn dominance(&self) -> Dominance {
        let n = self.lines.len();
        crate::meter::add(2 * n as u64);
        let mut first_lower = vec![n + 1; n];
        let mut first_header = vec![n + 1; n];
        // Statement lines after the current one whose indentation no earlier line has undercut:
        // from the top of the stack (nearest) down, indentation strictly decreases.
        let mut stack: Vec<(usize, usize)> = Vec::new();
        let mut header = n + 1;
        for idx in (0..n).rev() {
            let info = self.lines[idx];
            first_header[idx] = header;
            if info.statement() {
                while stack.last().is_some_and(|&(_, ind)| ind >= info.indent) {
                    stack.pop();
                }
                first_lower[idx] = stack.last().map_or(n + 1, |&(l, _)| l);
                stack.push((idx + 1, info.indent));
                if info.def_header {
                    header = idx + 1;
                }
            } else {
                // Not pushed: the nearest stacked line indented less, by binary search.
                let k = stack.partition_point(|&(_, ind)| ind < info.indent);
                first_lower[idx] = if k == 0 { n + 1 } else { stack[k - 1].0 };
            }
        }
        Dominance {
            first_lower,
            first_header,
        }
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

/// `(f-string, bytes)` when `word` is a string prefix (`r`, `b`, `f`, `rb`, …).
fn string_prefix(word: &[u8]) -> Option<(bool, bool)> {
    if word.is_empty() || word.len() > 2 {
        return None;
    }
    let mut lower = [0u8; 2];
    for (l, c) in lower.iter_mut().zip(word) {
        *l = c.to_ascii_lowercase();
    }
    match &lower[..word.len()] {
        b"r" | b"u" | b"b" | b"f" | b"br" | b"rb" | b"fr" | b"rf" => {
            Some((lower.contains(&b'f'), lower.contains(&b'b')))
        }
        _ => None,
    }
}

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// The lexer's running state: the line count and the code view being blanked.
struct Lexer<'a> {
    b: &'a [u8],
    code: Vec<u8>,
    out: Lexed,
    line: usize,
    /// Per-line start state (in a string, continued), filled in as each line begins.
    starts: Vec<(bool, bool)>,
    steps: u64,
    /// Record names (only the apex checks use them; a file's worth of them is memory).
    want_names: bool,
}

impl Lexer<'_> {
    fn newline_at(&mut self, i: usize, in_string: bool, continued: bool) {
        self.line += 1;
        self.starts.push((in_string, continued));
        self.out.line_starts.push(i + 1);
    }

    /// Blanks byte `i` of the code view (newlines stay, so lines keep their offsets).
    fn blank(&mut self, i: usize) {
        if let Some(c) = self.code.get_mut(i) {
            if *c != b'\n' && *c != b'\r' {
                *c = b' ';
            }
        }
    }

    /// Records the name at `b[s..e]` on the current line.
    fn push_name(&mut self, s: usize, e: usize, prev: Option<u8>, depth: usize) {
        if !self.want_names {
            return;
        }
        let b = self.b;
        let mut j = e;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        let kwarg = depth > 0 && b.get(j) == Some(&b'=') && b.get(j + 1) != Some(&b'=');
        self.out.names.push(Name {
            text: String::from_utf8_lossy(&b[s..e]).into_owned(),
            line: self.line,
            attr: prev == Some(b'.'),
            kwarg,
        });
    }

    /// Lexes the string literal whose opening quote is at `i` (its prefix, if any, starts at
    /// `start`); returns the index after it. Its contents are blanked in the code view except
    /// an f-string's `{…}` expressions, whose names are recorded.
    fn string(&mut self, mut i: usize, fstring: bool, bytes: bool) -> usize {
        let b = self.b;
        let n = b.len();
        let q = b[i];
        let first_line = self.line;
        let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
        i += if triple { 3 } else { 1 };
        let open = i;
        let mut close = n;
        let mut end = n;
        while i < n {
            self.steps += 1;
            let c = b[i];
            if c == b'\\' {
                self.blank(i);
                if b.get(i + 1) == Some(&b'\n') {
                    self.newline_at(i + 1, true, false);
                    i += 2;
                } else if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') {
                    self.newline_at(i + 2, true, false);
                    i += 3;
                } else {
                    self.blank(i + 1);
                    i += 2;
                }
                continue;
            }
            if c == b'\n' {
                if !triple {
                    // Unterminated: the string ends with the line.
                    close = i;
                    end = i;
                    break;
                }
                self.newline_at(i, true, false);
                i += 1;
                continue;
            }
            if c == q {
                if !triple {
                    close = i;
                    end = i + 1;
                    break;
                }
                if b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q) {
                    close = i;
                    end = i + 3;
                    break;
                }
            }
            if fstring && c == b'{' {
                if b.get(i + 1) == Some(&b'{') {
                    self.blank(i);
                    self.blank(i + 1);
                    i += 2;
                    continue;
                }
                match self.fstring_expr(i + 1, q, triple) {
                    Ok(next) => {
                        i = next;
                        continue;
                    }
                    Err(stop) => {
                        // The f-string ended inside its braces (unterminated or, before
                        // Python 3.12, its own quote).
                        close = stop;
                        end = if b.get(stop) == Some(&q) {
                            stop + 1
                        } else {
                            stop
                        };
                        break;
                    }
                }
            }
            self.blank(i);
            i += 1;
        }
        self.out.strings.push(StrLit {
            value: open..close.max(open),
            line: first_line,
            fstring,
            bytes,
            docstring: false,
        });
        end
    }

    /// Lexes an f-string's `{…}` expression from `i` (after the `{`): `Ok` with the index after
    /// its `}`, or `Err` with where the f-string itself ends. Every word in it counts as a name
    /// (nested strings' too — conservative); nested strings are blanked in the code view.
    fn fstring_expr(&mut self, mut i: usize, q: u8, triple: bool) -> Result<usize, usize> {
        let b = self.b;
        let n = b.len();
        let mut braces = 1usize;
        let mut prev: Option<u8> = Some(b'{');
        while i < n {
            self.steps += 1;
            let c = b[i];
            if c == q && !triple {
                return Err(i);
            }
            if c == b'\n' {
                if !triple {
                    return Err(i);
                }
                self.newline_at(i, true, false);
                i += 1;
                continue;
            }
            if c == b'\'' || c == b'"' {
                // A nested string (its own kind of quote), on this line.
                let mut j = i + 1;
                while j < n && b[j] != c && b[j] != b'\n' {
                    self.blank(j);
                    j += 1;
                }
                i = if j < n && b[j] == c { j + 1 } else { j };
                prev = Some(b'"');
                continue;
            }
            if c == b'{' {
                braces += 1;
            } else if c == b'}' {
                braces -= 1;
                if braces == 0 {
                    return Ok(i + 1);
                }
            } else if ident_start(c) {
                let s = i;
                while i < n && ident_char(b[i]) {
                    i += 1;
                }
                self.push_name(s, i, prev, 1);
                prev = Some(b'a');
                continue;
            }
            if !c.is_ascii_whitespace() {
                prev = Some(c);
            }
            i += 1;
        }
        Err(n)
    }
}

/// Lexes Python source. Never fails: unterminated strings or brackets run to the end.
pub fn lex(text: &str) -> Lexed {
    lex_with(text, true)
}

/// [`lex`] without [`Lexed::names`] (empty): what the line rules need, in less memory.
pub fn lex_without_names(text: &str) -> Lexed {
    lex_with(text, false)
}

fn lex_with(text: &str, want_names: bool) -> Lexed {
    let b = text.as_bytes();
    let n = b.len();
    let mut lx = Lexer {
        b,
        code: b.to_vec(),
        out: Lexed {
            line_starts: vec![0],
            ..Lexed::default()
        },
        line: 1,
        starts: vec![(false, false)],
        steps: 0,
        want_names,
    };
    let mut depth: usize = 0;
    let mut backslash = false;
    // The last significant byte outside strings/comments (for `.name`).
    let mut prev_sig: Option<u8> = None;
    // Docstrings: the strings of the current statement while it is nothing but strings.
    let mut stmt_start = true;
    let mut only_strings: Vec<usize> = Vec::new();
    let mut i = 0;

    // Ends a logical statement: if it was only string literals, they are prose.
    fn end_statement(lx: &mut Lexer, only_strings: &mut Vec<usize>) {
        for &k in only_strings.iter() {
            if let Some(s) = lx.out.strings.get_mut(k) {
                s.docstring = true;
            }
        }
        only_strings.clear();
    }

    while i < n {
        lx.steps += 1;
        let c = b[i];
        if c == b'\n' {
            if depth == 0 && !backslash {
                end_statement(&mut lx, &mut only_strings);
                stmt_start = true;
            }
            lx.newline_at(i, false, depth > 0 || backslash);
            backslash = false;
            i += 1;
            continue;
        }
        if c == b'\\' {
            // Only meaningful before a newline (a line continuation).
            backslash = b.get(i + 1) == Some(&b'\n')
                || (b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n'));
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        backslash = false;
        if c == b'#' {
            while i < n && b[i] != b'\n' {
                lx.blank(i);
                i += 1;
            }
            continue;
        }
        let first = std::mem::replace(&mut stmt_start, false);
        let mut is_string = false;
        if c.is_ascii_digit() {
            while i < n && (ident_char(b[i]) || b[i] == b'.') {
                i += 1;
            }
            prev_sig = Some(b'0');
        } else if ident_start(c) {
            let s = i;
            while i < n && ident_char(b[i]) {
                i += 1;
            }
            let quoted = i < n && (b[i] == b'\'' || b[i] == b'"');
            match string_prefix(&b[s..i]).filter(|_| quoted) {
                Some((fstring, bytes)) => {
                    i = lx.string(i, fstring, bytes);
                    prev_sig = Some(b'"');
                    is_string = true;
                }
                _ => {
                    lx.push_name(s, i, prev_sig, depth);
                    prev_sig = Some(b'a');
                }
            }
        } else if c == b'\'' || c == b'"' {
            i = lx.string(i, false, false);
            prev_sig = Some(b'"');
            is_string = true;
        } else {
            match c {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            prev_sig = Some(c);
            i += 1;
            if c == b';' && depth == 0 {
                end_statement(&mut lx, &mut only_strings);
                stmt_start = true;
                continue;
            }
        }
        if is_string && (first || !only_strings.is_empty()) {
            only_strings.push(lx.out.strings.len() - 1);
        } else if !is_string {
            only_strings.clear();
        }
    }
    end_statement(&mut lx, &mut only_strings);
    crate::meter::add(lx.steps);

    let Lexer {
        code,
        mut out,
        starts,
        ..
    } = lx;
    // Blanking replaced whole characters by spaces, so the view is UTF-8; if it ever were
    // not, an all-blank view (nothing counts as code) is the safe answer.
    out.code = String::from_utf8(code).unwrap_or_else(|e| {
        e.into_bytes()
            .iter()
            .map(|&c| if c == b'\n' { '\n' } else { ' ' })
            .collect()
    });
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

    /// The definition, line by line, that [`Lexed::dominates`] answers in constant time.
    fn dominates_by_scan(l: &Lexed, def: usize, use_: usize) -> bool {
        if def == 0 || use_ <= def || use_ > l.lines.len() {
            return false;
        }
        let k = l.lines[def - 1].indent;
        (def + 1..=use_).all(|i| {
            let info = &l.lines[i - 1];
            !info.statement() || !(info.indent < k || (i < use_ && info.def_header))
        })
    }

    #[test]
    fn dominance_agrees_with_the_line_by_line_definition() {
        let srcs = [
            "def f():\n    if a:\n        s = 1\n    s.x()\n    s = 2\n    for i in r:\n        s.y()\ndef g():\n    s.z()\n",
            "s = 1\nclass C:\n    s = 2\n    def m(self):\n        s = (1,\n  2)\n        '''doc\nx'''\n        @d\n        def n():\n            s\n        s\n    s\ns\n",
            "if a:\n\ts = 1\n        t = s\n    # c\n\tu = 2\nelse:\n  s = 3\n  s\n",
        ];
        for src in srcs {
            let l = lex(src);
            let n = l.lines.len();
            for d in 0..=n + 1 {
                for u in 0..=n + 1 {
                    assert_eq!(
                        l.dominates(d, u),
                        dominates_by_scan(&l, d, u),
                        "{d} -> {u} in {src:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn code_view_blanks_strings_and_comments_keeps_fstring_expressions() {
        let src = "x = 'a.cuda()'  # b.cuda()\ny = f\"cuda:{t.cuda()}\" + \"\"\"\nz.cuda()\"\"\"\n";
        let l = lex(src);
        assert_eq!(l.code.len(), src.len());
        assert_eq!(l.code_line(0), "x = '        '            \n");
        assert_eq!(l.code_line(1), "y = f\"     {t.cuda()}\" + \"\"\"\n");
        assert_eq!(l.code_line(2), "        \"\"\"\n");
        let values: Vec<&str> = l.strings.iter().map(|s| &src[s.value.clone()]).collect();
        assert_eq!(values, vec!["a.cuda()", "cuda:{t.cuda()}", "\nz.cuda()"]);
        assert!(l.strings[1].fstring);
        assert_eq!(l.line_of(l.strings[2].value.end), 2);
    }

    #[test]
    fn docstrings_are_string_only_statements() {
        let src = "\"\"\"Module.\"\"\"\ndef f():\n    'doc' \"more\"\n    x = 'cuda'\n    ('not', 'doc')\n    return 'cuda'; 'prose'\n";
        let l = lex(src);
        let docs: Vec<(&str, bool)> = l
            .strings
            .iter()
            .map(|s| (&src[s.value.clone()], s.docstring))
            .collect();
        assert_eq!(
            docs,
            vec![
                ("Module.", true),
                ("doc", true),
                ("more", true),
                ("cuda", false),
                ("not", false),
                ("doc", false),
                ("cuda", false),
                ("prose", true),
            ]
        );
    }

    #[test]
    fn non_ascii_text_keeps_offsets() {
        let src = "s = 'café ☕'  # naïve\nnäme = t.cuda()\n";
        let l = lex(src);
        assert_eq!(l.code.len(), src.len());
        assert!(l.code_line(1).contains("t.cuda()"));
        assert_eq!(l.variable_lines("näme"), vec![2]);
    }
}
