//! Where a key of a case is in the text (block-style YAML; flow style by `case_name`).

/// Line lookup in block-style YAML: where each top-level list item begins and on which line a
/// key path of an item is. Best effort (flow style falls back to the item's first line).
pub(super) struct Locator<'a> {
    lines: Vec<&'a str>,
}

impl<'a> Locator<'a> {
    pub fn new(text: &'a str) -> Locator<'a> {
        Locator {
            lines: text.lines().collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Not blank, not a comment, not a document marker.
    fn significant(&self, l: usize) -> bool {
        let t = self.lines[l].trim();
        !(t.is_empty() || t.starts_with('#') || t == "---" || t == "..." || t.starts_with('%'))
    }

    fn indent(&self, l: usize) -> usize {
        let line = self.lines[l];
        line.len() - line.trim_start_matches(' ').len()
    }

    /// 0-based line of the first line that is not blank or a comment.
    pub fn first_significant(&self) -> Option<usize> {
        (0..self.len()).find(|&l| self.significant(l))
    }

    /// 0-based lines of every `case_name` key, in order (one entry per key, so items sharing
    /// a line share it): where the items of a flow-style list begin. One pass over the text.
    pub fn flow_items(&self) -> Vec<usize> {
        const KEY: &str = "case_name";
        let mut out = Vec::new();
        for (l, line) in self.lines.iter().enumerate() {
            if line.trim_start().starts_with('#') {
                continue;
            }
            for (at, _) in line.match_indices(KEY) {
                let before = line[..at].chars().next_back();
                let after = line[at + KEY.len()..].trim_start_matches(['"', '\'']);
                let is_key = before
                    .is_none_or(|c| matches!(c, '{' | ',' | ' ' | '\t' | '"' | '\''))
                    && after.trim_start().starts_with(':');
                if is_key {
                    out.push(l);
                }
            }
        }
        out
    }

    /// 0-based first lines of the top-level list's items.
    pub fn items(&self) -> Vec<usize> {
        let Some(first) = self.first_significant() else {
            return Vec::new();
        };
        let col = self.indent(first);
        let is_item = |l: usize| {
            let line = self.lines[l];
            self.indent(l) == col && {
                let rest = &line[col..];
                rest == "-" || rest.starts_with("- ") || rest.starts_with("-\t")
            }
        };
        if !is_item(first) {
            return Vec::new();
        }
        (first..self.len()).filter(|&l| is_item(l)).collect()
    }

    /// `(column, key)` of a `key:` on line `l`, after any `- ` list markers.
    fn key_at(&self, l: usize) -> Option<(usize, &'a str)> {
        let line = self.lines[l];
        let mut col = self.indent(l);
        let mut rest = &line[col..];
        while let Some(r) = rest.strip_prefix("- ") {
            let trimmed = r.trim_start_matches(' ');
            col += rest.len() - trimmed.len();
            rest = trimmed;
        }
        let (key, after) = match rest.chars().next()? {
            q @ ('"' | '\'') => {
                let close = rest[1..].find(q)? + 1;
                (&rest[1..close], &rest[close + 1..])
            }
            _ => {
                let colon = rest.find(':')?;
                (rest[..colon].trim_end(), &rest[colon..])
            }
        };
        let after = after.trim_start();
        let after = after.strip_prefix(':')?;
        (after.is_empty() || after.starts_with([' ', '\t'])).then_some((col, key))
    }

    /// 1-based line of `path` (keys from the item down) within lines `[start, end)`: the
    /// deepest key found, else the item's first line.
    pub fn find(&self, start: usize, end: usize, path: &[&str]) -> usize {
        let (mut lo, mut hi) = (start, end.min(self.len()));
        let mut line = start;
        // The column the keys of the current level are at (the item's: its first key's).
        let mut level = self.key_at(start).map(|(c, _)| c);
        for key in path {
            let hit = (lo..hi).find(|&l| {
                self.key_at(l)
                    .is_some_and(|(c, k)| k == *key && level.is_none_or(|lc| c == lc))
            });
            let Some(l) = hit else { break };
            line = l;
            let col = self.key_at(l).map_or(0, |(c, _)| c);
            lo = l + 1;
            hi = (lo..hi)
                .find(|&m| self.significant(m) && self.indent(m) <= col)
                .unwrap_or(hi);
            level = (lo..hi)
                .find(|&m| self.significant(m))
                .and_then(|m| self.key_at(m))
                .map(|(c, _)| c);
        }
        line + 1
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::zoo_cases::ZooCases;

    #[test]
    fn locator_finds_nested_keys_at_their_own_level() {
        let text = "\
# cases
- case_name: a
  desc:
    run_dir: PyTorch/x
    run_file: run_scripts/r.py
  params:
    others:
      lr: 1
    lr: 0.1
- case_name: b
  params: {lr: 2}
";
        let l = Locator::new(text);
        let items = l.items();
        assert_eq!(items, vec![1, 9]);
        assert_eq!(l.find(1, 9, &["case_name"]), 2);
        assert_eq!(l.find(1, 9, &["desc", "run_file"]), 5);
        assert_eq!(
            l.find(1, 9, &["params", "lr"]),
            9,
            "params.lr, not others.lr"
        );
        assert_eq!(l.find(1, 9, &["params", "others", "lr"]), 8);
        // Flow style: the parent's line.
        assert_eq!(l.find(9, 11, &["params", "lr"]), 11);
        assert_eq!(l.find(9, 11, &["desc"]), 10);
    }

    /// Issue #38 C11: a flow-style list's items are found by their `case_name` keys in one
    /// pass, so each case is looked up in its own lines (not the whole file: quadratic).
    #[test]
    fn flow_style_items_begin_at_their_case_name() {
        let text = "\
# a flow list
[
  {case_name: a, desc: {run_dir: x}},
  {\"case_name\": b}, {'case_name' : c},
  {desc: {run_dir: my_case_name}, case_name: d}
]
";
        let l = Locator::new(text);
        assert_ne!(l.items().len(), 4, "not a block list");
        assert_eq!(l.flow_items(), vec![2, 3, 3, 4]);
        let cases = ZooCases::inspect_text(text, Path::new("/nonexistent/model.yaml"));
        let lines: Vec<usize> = cases
            .violations
            .iter()
            .filter(|v| v.case.as_deref() == Some("c"))
            .map(|v| v.line)
            .collect();
        assert!(!lines.is_empty(), "{:?}", cases.violations);
        assert!(
            lines.iter().all(|&l| l == 4),
            "case c is on line 4: {lines:?}"
        );
    }
}
