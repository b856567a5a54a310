//! Putting text the tools do not control — file and model names, log lines, error messages —
//! into Markdown so that it reads as written: a backtick in a file name must not end its code
//! span, a `|` must not split a table cell, `*`/`_`/`[`/`<` must not become emphasis, links or
//! HTML, and a newline must not end a list item or a table row.

/// `s` as inline text: Markdown's active characters backslash-escaped (CommonMark allows a
/// backslash before any ASCII punctuation), line breaks flattened to spaces. Safe in a
/// paragraph, a list item, a heading and a table cell.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '\r' | '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `s` as an inline code span that shows it verbatim: delimited by one backtick more than the
/// longest run of backticks inside, padded with a space when it begins or ends with a backtick
/// (or with a space, which CommonMark would strip), line breaks flattened. For a table cell use
/// [`code_cell`].
pub fn code(s: &str) -> String {
    let s = s.replace(['\r', '\n'], " ");
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = s.starts_with('`')
        || s.ends_with('`')
        || (s.starts_with(' ') && s.ends_with(' ') && !s.trim().is_empty())
        || s.is_empty();
    if pad {
        format!("{fence} {s} {fence}")
    } else {
        format!("{fence}{s}{fence}")
    }
}

/// [`code`] for a GFM table cell: a `|` inside is escaped as well (the table is split into cells
/// before code spans are read; `\|` shows as `|` inside the span).
pub fn code_cell(s: &str) -> String {
    code(s).replace('|', "\\|")
}

/// A fenced code block holding `s` verbatim: the fence is three backticks, or one more than the
/// longest run of backticks at the start of any line of `s`, so nothing in `s` can close it.
pub fn code_block(s: &str) -> String {
    let longest = s
        .lines()
        .map(|l| l.trim_start().chars().take_while(|&c| c == '`').count())
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = s.strip_suffix('\n').unwrap_or(s);
    format!("{fence}\n{body}\n{fence}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_escapes_what_markdown_would_act_on() {
        assert_eq!(text("a_b*c"), "a\\_b\\*c");
        assert_eq!(text("x | y"), "x \\| y");
        assert_eq!(text("[l](u) <b> `c`"), "\\[l\\](u) \\<b\\> \\`c\\`");
        assert_eq!(text("line\nnext"), "line next");
        assert_eq!(text("C:\\dir"), "C:\\\\dir");
        assert_eq!(text("plain words, 1.5 s"), "plain words, 1.5 s");
    }

    #[test]
    fn code_spans_outlast_the_backticks_inside() {
        assert_eq!(code("run.py"), "`run.py`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a``b`"), "``` a``b` ```");
        assert_eq!(code(" x "), "`  x  `");
        assert_eq!(code("two\nlines"), "`two lines`");
        assert_eq!(code_cell("a|b"), "`a\\|b`");
    }

    #[test]
    fn a_code_block_cannot_be_closed_from_inside() {
        assert_eq!(code_block("ls\n"), "```\nls\n```\n");
        assert_eq!(code_block("a\n```\nb"), "````\na\n```\nb\n````\n");
    }
}
