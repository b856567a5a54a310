//! Just enough Markdown structure for the README rules of `modelzoo validate`: which lines are
//! code, ATX headings and the sections they open, pipe tables, argument entries, placeholders.
//! Not a CommonMark parser: a reviewer's reading of a README, line by line.

use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

/// One line of a README: its 1-based number, its text with HTML comments removed (they do not
/// render, so nothing in them counts), and whether it is inside a fenced code block (fence
/// lines included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub no: usize,
    pub text: String,
    pub code: bool,
}

/// The lines of `text`, fenced code (```` ``` ```` or `~~~`) marked, HTML comments
/// (`<!-- ... -->`, possibly over several lines) blanked outside code.
pub(crate) fn scan(text: &str) -> Vec<Line> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut in_comment = false;
    for (i, raw) in text.lines().enumerate() {
        let no = i + 1;
        if let Some(marker) = fence {
            // Only the marker alone closes the block: a "```bash" line inside it is content
            // (CommonMark; GitHub renders it so), not the end of the block and a new one.
            let t = raw.trim_start();
            if t.starts_with(marker) && t.trim_start_matches(&marker[..1]).trim().is_empty() {
                fence = None;
            }
            out.push(Line {
                no,
                text: raw.to_string(),
                code: true,
            });
            continue;
        }
        if !in_comment {
            let t = raw.trim_start();
            if let Some(marker) = ["```", "~~~"].into_iter().find(|m| t.starts_with(m)) {
                fence = Some(marker);
                out.push(Line {
                    no,
                    text: raw.to_string(),
                    code: true,
                });
                continue;
            }
        }
        let mut kept = String::new();
        let mut rest = raw;
        loop {
            if in_comment {
                match rest.find("-->") {
                    Some(end) => {
                        rest = &rest[end + 3..];
                        in_comment = false;
                    }
                    None => break,
                }
            } else {
                match rest.find("<!--") {
                    Some(start) => {
                        kept.push_str(&rest[..start]);
                        rest = &rest[start + 4..];
                        in_comment = true;
                    }
                    None => {
                        kept.push_str(rest);
                        break;
                    }
                }
            }
        }
        out.push(Line {
            no,
            text: kept,
            code: false,
        });
    }
    out
}

/// An ATX heading and the lines below it up to the next heading of the same or a higher level
/// (its subsections included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub level: usize,
    /// The heading's text as written, numbering kept.
    pub title: String,
    /// Line number of the heading.
    pub line: usize,
    /// Indices into the scanned lines of the section's body.
    pub body: Range<usize>,
}

fn heading(line: &Line) -> Option<(usize, String)> {
    if line.code {
        return None;
    }
    let t = line.text.trim_start();
    let level = t.chars().take_while(|&c| c == '#').count();
    if level == 0 {
        return None;
    }
    let rest = &t[level..];
    (rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t'))
        .then(|| (level, rest.trim().to_string()))
}

/// Every heading outside code, with its section's extent.
pub(crate) fn sections(lines: &[Line]) -> Vec<Section> {
    let heads: Vec<(usize, usize, String)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| heading(l).map(|(level, title)| (i, level, title)))
        .collect();
    heads
        .iter()
        .enumerate()
        .map(|(k, (i, level, title))| {
            let end = heads[k + 1..]
                .iter()
                .find(|(_, l, _)| l <= level)
                .map(|(j, _, _)| *j)
                .unwrap_or(lines.len());
            Section {
                level: *level,
                title: title.clone(),
                line: lines[*i].no,
                body: i + 1..end,
            }
        })
        .collect()
}

/// The cells of a pipe-table row: outer pipes dropped, split on unescaped `|`, trimmed.
fn cells(row: &str) -> Vec<String> {
    let t = row.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = if t.ends_with('|') && !t.ends_with("\\|") {
        &t[..t.len() - 1]
    } else {
        t
    };
    let mut out = vec![String::new()];
    let mut escaped = false;
    for c in t.chars() {
        match c {
            '|' if !escaped => out.push(String::new()),
            c => out.last_mut().expect("never empty").push(c),
        }
        escaped = c == '\\';
    }
    out.iter().map(|c| c.trim().to_string()).collect()
}

/// `|---|:--:|` and the like: the row under a table's header.
fn is_delimiter_row(text: &str) -> bool {
    text.contains('|')
        && cells(text).iter().all(|c| {
            let c = c.strip_prefix(':').unwrap_or(c);
            let c = c.strip_suffix(':').unwrap_or(c);
            !c.is_empty() && c.chars().all(|ch| ch == '-')
        })
}

/// A pipe table: a header row, its delimiter row, and the body rows (as cells).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The pipe tables among `lines` (outside code): a header row, a delimiter row with as many
/// cells, then rows up to a blank line, a line without `|` or a heading.
pub(crate) fn tables(lines: &[Line]) -> Vec<Table> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let (head, delim) = (&lines[i], &lines[i + 1]);
        let header = cells(&head.text);
        if head.code
            || delim.code
            || !head.text.contains('|')
            || !is_delimiter_row(&delim.text)
            || cells(&delim.text).len() != header.len()
        {
            i += 1;
            continue;
        }
        let mut rows = Vec::new();
        let mut j = i + 2;
        while j < lines.len()
            && !lines[j].code
            && lines[j].text.contains('|')
            && heading(&lines[j]).is_none()
        {
            rows.push(cells(&lines[j].text));
            j += 1;
        }
        out.push(Table { header, rows });
        i = j;
    }
    out
}

/// Whether `lines` hold a table with at least one body row (a pipe table, or HTML `<table>`).
pub(crate) fn has_table(lines: &[Line]) -> bool {
    tables(lines).iter().any(|t| !t.rows.is_empty())
        || lines
            .iter()
            .any(|l| !l.code && l.text.to_ascii_lowercase().contains("<table"))
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The argument names a table's first cell gives: "`--epoch` (`--epochs`)", "--lr, -l",
/// "model_name", "**lr**" — each alternative's first word, dashes and `=value` dropped. Prose
/// ("batch size per step") gives only its first word.
fn entry_names(cell: &str) -> Vec<String> {
    cell.replace('`', "")
        .split([',', '/', ';', '(', ')', '、', '，', '（', '）'])
        .filter_map(|alt| alt.split_whitespace().next())
        .map(|word| {
            let word = word.split('=').next().unwrap_or(word);
            word.trim_matches(|c: char| !is_ident(c) && c != '-')
                .trim_start_matches('-')
                .trim_matches(|c: char| !is_ident(c) && c != '-')
                .to_string()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// The arguments a README documents as entries: the first cell of a table row (any line outside
/// code starting with `|`, or a body row of a pipe table), and every `--name` token (in prose or
/// code) whose name ends at a non-name character — `--auto-scale-lr` documents
/// `auto-scale-lr`, not `lr`. A word in prose documents nothing.
pub(crate) fn argument_entries(lines: &[Line]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for l in lines.iter().filter(|l| !l.code) {
        let t = l.text.trim_start();
        if t.starts_with('|') && !is_delimiter_row(t) {
            if let Some(first) = cells(t).first() {
                names.extend(entry_names(first));
            }
        }
    }
    for t in tables(lines) {
        for row in &t.rows {
            if let Some(first) = row.first() {
                names.extend(entry_names(first));
            }
        }
    }
    static FLAG: OnceLock<Regex> = OnceLock::new();
    let flag = FLAG.get_or_init(|| {
        Regex::new(r"(?:^|[^A-Za-z0-9_-])--([A-Za-z0-9_][A-Za-z0-9_-]*)").expect("valid regex")
    });
    for l in lines {
        names.extend(flag.captures_iter(&l.text).map(|c| c[1].to_string()));
    }
    names.sort();
    names.dedup();
    names
}

/// Placeholder words a scaffold (or an unfinished README) leaves: whole ASCII words.
const PLACEHOLDER_WORDS: &[&str] = &["TODO", "FIXME", "TBD"];
/// Chinese placeholders ("to be added", "to be filled in").
const PLACEHOLDER_PHRASES: &[&str] = &["待补充", "待填写"];

/// `(line number, placeholder)` for each line outside code and HTML comments that still holds
/// a placeholder: `TODO`/`FIXME`/`TBD` as a word, 待补充/待填写, an unrendered template
/// variable `{{name}}`, or the README template's `<MODEL …>` slot (`<MODLE MaskFormer>`).
pub(crate) fn placeholders(lines: &[Line]) -> Vec<(usize, String)> {
    static TEMPLATE: OnceLock<Regex> = OnceLock::new();
    let template = TEMPLATE
        .get_or_init(|| Regex::new(r"\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}").expect("valid regex"));
    // The ModelZoo README template's own slots, `<MODEL name>` (also as misspelt in the
    // template: `<MODLE MaskFormer>`), left in instead of the model's name.
    static TAG: OnceLock<Regex> = OnceLock::new();
    let tag = TAG.get_or_init(|| {
        Regex::new(r"<\s*(?:MODEL|MODLE)(?:[ _:][^<>\n]*)?>").expect("valid regex")
    });
    let mut out = Vec::new();
    for l in lines.iter().filter(|l| !l.code) {
        let word = PLACEHOLDER_WORDS.iter().find(|w| {
            l.text.match_indices(**w).any(|(at, _)| {
                let before = l.text[..at].chars().next_back();
                let after = l.text[at + w.len()..].chars().next();
                !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
            })
        });
        let found = word
            .map(|w| w.to_string())
            .or_else(|| {
                PLACEHOLDER_PHRASES
                    .iter()
                    .find(|p| l.text.contains(**p))
                    .map(|p| p.to_string())
            })
            .or_else(|| template.find(&l.text).map(|m| m.as_str().to_string()))
            .or_else(|| tag.find(&l.text).map(|m| m.as_str().to_string()));
        if let Some(p) = found {
            out.push((l.no, p));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_marks_fences_and_drops_html_comments() {
        let lines = scan("a <!-- x -->b\n<!-- one\ntwo -->c\n```\n<!-- kept\n```\nd\n");
        let texts: Vec<(&str, bool)> = lines.iter().map(|l| (l.text.as_str(), l.code)).collect();
        assert_eq!(
            texts,
            vec![
                ("a b", false),
                ("", false),
                ("c", false),
                ("```", true),
                ("<!-- kept", true),
                ("```", true),
                ("d", false)
            ]
        );
    }

    #[test]
    fn sections_run_to_the_next_heading_of_the_same_level() {
        let lines = scan("# T\n## A\nx\n### A.1\ny\n## B\nz\n");
        let s = sections(&lines);
        let a = s.iter().find(|s| s.title == "A").unwrap();
        assert_eq!((a.level, a.line, a.body.clone()), (2, 2, 2..5));
        assert_eq!(s.last().unwrap().body, 6..7);
    }

    #[test]
    fn tables_need_a_delimiter_row_and_a_body_row_counts() {
        assert!(!has_table(&scan("| a | b |\n| 1 | 2 |\n")));
        assert!(!has_table(&scan("| a | b |\n|---|---|\n")));
        assert!(has_table(&scan("| a | b |\n|:--|--:|\n| 1 | 2 |\n")));
        assert!(has_table(&scan("a | b\n--- | ---\n1 | 2\n")));
        assert!(!has_table(&scan("```\n| a |\n|---|\n| 1 |\n```\n")));
        assert!(has_table(&scan("<table><tr><td>1</td></tr></table>\n")));
        let t = tables(&scan("| a \\| b | c |\n|---|---|\n| `x` | y |\n"));
        assert_eq!(t[0].header, vec!["a \\| b", "c"]);
        assert_eq!(t[0].rows, vec![vec!["`x`", "y"]]);
    }

    #[test]
    fn argument_entries_are_first_cells_and_flags_not_prose() {
        let text = "每个训练 step 的样本数量\n\
                    | name | meaning |\n|---|---|\n\
                    | `--epoch` (`--epochs`) | e |\n| auto-scale-lr | x |\n| **batch_size** | b |\n\
                    | batch size per device | b |\n\
                    use --auto-scale-lr or --model_name=x, not model-lr\n\
                    ```\npython run.py --device sdaa\n```\n";
        let names = argument_entries(&scan(text));
        for want in [
            "epoch",
            "epochs",
            "auto-scale-lr",
            "batch_size",
            "model_name",
            "device",
        ] {
            assert!(names.iter().any(|n| n == want), "{want}: {names:?}");
        }
        for not in ["step", "lr", "size", "device_count"] {
            assert!(!names.iter().any(|n| n == not), "{not}: {names:?}");
        }
    }

    #[test]
    fn placeholders_are_words_outside_code_and_comments() {
        let text = "TODO: intro\n<!-- Replace every \"TODO\" -->\nTODOS and todo are fine\n\
                    ```\n# TODO in code\n```\n| TBD | x |\n精度待补充\n{{name}} and {{ title }}\n";
        assert_eq!(
            placeholders(&scan(text)),
            vec![
                (1, "TODO".to_string()),
                (7, "TBD".to_string()),
                (8, "待补充".to_string()),
                (9, "{{name}}".to_string())
            ]
        );
    }

    #[test]
    fn the_readme_templates_model_slot_is_a_placeholder() {
        let text = "# <MODLE MaskFormer>\n<MODEL>\n<model-viewer> and <ModelZoo_path> are not\n\
                    <img src=\"x.png\">\n```\n<MODEL in code>\n```\n";
        assert_eq!(
            placeholders(&scan(text)),
            vec![
                (1, "<MODLE MaskFormer>".to_string()),
                (2, "<MODEL>".to_string())
            ]
        );
    }
}
