//! Text from outside the kit (file names, commands, log lines, error messages) put into
//! `PORT.md` safely: it can neither end a code span early, nor open a heading, a list, a
//! link or an HTML tag, nor split a table cell.

/// `s` as an inline code span: fenced with one backtick more than its longest run of
/// backticks (padded with a space when it starts or ends with one), newlines shown as `⏎`.
/// In a table cell, use [`cell_code`] (a `|` still splits the cell inside a code span).
pub fn code(s: &str) -> String {
    let s = one_line(s);
    let longest = longest_run(&s, '`');
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') || s.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// [`code`] for a table cell: `|` escaped as `\|` (GFM removes the backslash in a code span).
pub fn cell_code(s: &str) -> String {
    code(s).replace('|', "\\|")
}

/// `s` as plain Markdown text, on one line: every character Markdown or HTML could read as
/// syntax is backslash-escaped, and a line-start marker (`-`, `+`, `=`, `1.`) is escaped too.
pub fn text(s: &str) -> String {
    let s = one_line(s);
    let mut out = String::with_capacity(s.len() + 8);
    for (i, ch) in s.chars().enumerate() {
        let start_marker = i == 0 && matches!(ch, '-' | '+' | '=');
        if start_marker
            || matches!(
                ch,
                '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '!' | '~' | '&'
            )
        {
            out.push('\\');
        }
        out.push(ch);
    }
    // `1. item` / `1) item` at the start would make a list.
    let digits = out.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && matches!(out[digits..].chars().next(), Some('.' | ')')) {
        out.insert(digits, '\\');
    }
    out
}

/// The lines of a fenced code block holding `body`: the fence is longer than any run of
/// backticks in it, so nothing inside can close it.
pub fn block(body: &str) -> String {
    let fence = "`".repeat((longest_run(body, '`') + 1).max(3));
    format!("{fence}\n{}\n{fence}", body.trim_end_matches('\n'))
}

fn one_line(s: &str) -> String {
    s.replace("\r\n", "⏎").replace(['\n', '\r'], "⏎")
}

fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in s.chars() {
        if ch == c {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_outlast_backticks_and_text_is_inert() {
        assert_eq!(code("a.py"), "`a.py`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x``"), "``` `x`` ```");
        assert_eq!(code("a\nb"), "`a⏎b`");
        assert_eq!(cell_code("a|b"), "`a\\|b`");
        assert_eq!(text("## Verdict: PASS"), "\\#\\# Verdict: PASS");
        assert_eq!(
            text("<img src=x onerror=alert(1)>"),
            "\\<img src=x onerror=alert(1)\\>"
        );
        assert_eq!(text("- x"), "\\- x");
        assert_eq!(text("12. x"), "12\\. x");
        assert_eq!(text("a\n# b"), "a⏎\\# b");
        assert_eq!(block("x ``` y"), "````\nx ``` y\n````");
    }
}
