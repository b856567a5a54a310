//! `MIGRATION.md`: the report a `--write` keeps in the migrated directory — each file written
//! with the lines it changed, and every finding that still needs a person, with line numbers
//! of the written files. The next run reads it back, so running again on migrated output keeps
//! listing what a person still has to do (a rewrite leaves nothing behind to re-detect).
//!
//! The Markdown is for people; the machine-readable part is a JSON-lines block in an HTML
//! comment at its end, one entry per line. A recorded finding is dropped once the line it
//! points at is gone (changed by a person) or its entry is deleted.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::{display_path, Finding, Report, WrittenFile};
use crate::rules::RULES;

/// The record's file name, in the migrated directory.
pub const RECORD_FILE: &str = "MIGRATION.md";

const MARKER: &str = "<!-- modelzoo-migrate record v1";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct RecordedFinding {
    path: PathBuf,
    line: usize,
    rule: String,
    message: String,
    /// The line's text (trimmed) when it was recorded: how the next run finds it again.
    text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Entry {
    Finding(RecordedFinding),
    Written(WrittenFile),
}

/// What an earlier `--write` recorded.
#[derive(Debug, Clone, Default)]
pub(crate) struct Record {
    pub findings: Vec<Finding>,
    pub written: Vec<WrittenFile>,
}

/// Whether `path` is absent or a record this tool wrote (so it may be replaced).
pub(crate) fn ours_or_absent(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Err(_) => true,
        Ok(m) if !m.is_file() => false,
        Ok(_) => crate::regular::read_regular(path)
            .is_ok_and(|t| String::from_utf8_lossy(&t).contains(MARKER)),
    }
}

/// Reads the record in `root`, relocating each finding by its line's text in the file as it is
/// now; findings whose line is gone (or whose file is) are dropped: a person handled them.
pub(crate) fn load(root: &Path) -> Record {
    let path = root.join(RECORD_FILE);
    let mut record = Record::default();
    // Never follow a link: nothing outside the directory is read.
    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
        return record;
    }
    let Some(text) = crate::regular::read_regular(&path)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
    else {
        return record;
    };
    let Some(start) = text.find(MARKER) else {
        return record;
    };
    let mut files: std::collections::BTreeMap<PathBuf, Option<LineIndex>> = Default::default();
    for line in text[start..].lines().skip(1) {
        if line.trim_start().starts_with("-->") {
            break;
        }
        let Ok(entry) = serde_json::from_str::<Entry>(line) else {
            continue;
        };
        match entry {
            Entry::Written(w) => record.written.push(w),
            Entry::Finding(f) => {
                let Some(rule) = RULES.iter().find(|r| r.id == f.rule).map(|r| r.id) else {
                    continue;
                };
                let lines = files
                    .entry(f.path.clone())
                    .or_insert_with(|| LineIndex::read(&root.join(&f.path)));
                let Some(lines) = lines else { continue };
                let Some(line) = lines.relocate(f.line, &f.text) else {
                    continue;
                };
                record.findings.push(Finding {
                    path: f.path,
                    line,
                    rule,
                    message: f.message,
                    recorded: true,
                });
            }
        }
    }
    record
}

/// A file's lines (trimmed) by text, so each recorded finding is found again in logarithmic
/// time however far it moved or if it is gone — a scan per finding made a file with many
/// findings quadratic.
struct LineIndex {
    /// 1-based line numbers of each text, ascending.
    at: std::collections::HashMap<String, Vec<usize>>,
    lines: Vec<String>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        let lines: Vec<String> = text.lines().map(|l| l.trim().to_string()).collect();
        let mut at: std::collections::HashMap<String, Vec<usize>> = Default::default();
        for (i, l) in lines.iter().enumerate() {
            at.entry(l.clone()).or_default().push(i + 1);
        }
        crate::meter::add(lines.len() as u64);
        LineIndex { at, lines }
    }

    /// The index of the regular file at `path` (never a link), or `None`.
    fn read(path: &Path) -> Option<LineIndex> {
        let bytes = crate::regular::read_regular(path).ok()?;
        Some(LineIndex::new(&String::from_utf8(bytes).ok()?))
    }

    /// The 1-based line holding `text` nearest to `line` (the earlier one on a tie).
    fn relocate(&self, line: usize, text: &str) -> Option<usize> {
        crate::meter::add(1);
        let at = self.at.get(text)?;
        let line = line.max(1);
        let k = at.partition_point(|&l| l < line);
        let after = at.get(k).copied();
        let before = k.checked_sub(1).and_then(|k| at.get(k)).copied();
        match (before, after) {
            (Some(b), Some(a)) => Some(if line - b <= a - line { b } else { a }),
            (b, a) => b.or(a),
        }
    }

    /// The trimmed text of 1-based `line`.
    fn text(&self, line: usize) -> &str {
        self.lines
            .get(line.saturating_sub(1))
            .map_or("", |l| l.as_str())
    }
}

/// `MIGRATION.md` for a report whose findings are in the line numbers of the files on disk,
/// `written` the files rewritten (this run's and earlier runs').
pub(crate) fn render(report: &Report, written: &[WrittenFile]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "# CUDA → SDAA migration\n");
    let _ = writeln!(
        out,
        "Kept by `modelzoo migrate --write`, and read back by every later run: a finding below stays \
         listed until the line it points at changes or its entry in the record at the end of this \
         file is deleted. Line numbers are those of the files as written.\n"
    );
    let _ = writeln!(out, "## Files written ({})\n", written.len());
    if written.is_empty() {
        let _ = writeln!(out, "None.\n");
    }
    for w in written {
        let _ = writeln!(
            out,
            "- `{}`: {} {} ({})",
            display_path(&w.path),
            if w.lines.contains([',', '-']) {
                "lines"
            } else {
                "line"
            },
            w.lines,
            w.rewrites
        );
    }
    if !written.is_empty() {
        let _ = writeln!(out);
    }
    out.push_str(&crate::custom_ops::render_markdown(&report.custom_ops));
    let _ = writeln!(out, "## Needs a person ({})\n", report.findings.len());
    crate::render_findings_and_skipped(&mut out, report);
    let _ = writeln!(
        out,
        "{MARKER}: one entry per line, read by the next run; delete a finding's line once it is handled"
    );
    let json = |e: &Entry| {
        // `>` escaped so no entry can close the comment.
        serde_json::to_string(e)
            .unwrap_or_default()
            .replace('>', "\\u003e")
    };
    for w in written {
        let _ = writeln!(out, "{}", json(&Entry::Written(w.clone())));
    }
    // Each file read once, however many findings it has.
    let mut files: std::collections::HashMap<&Path, Option<LineIndex>> = Default::default();
    for f in &report.findings {
        let lines = files
            .entry(f.path.as_path())
            .or_insert_with(|| LineIndex::read(&report.root.join(&f.path)));
        let entry = Entry::Finding(RecordedFinding {
            path: f.path.clone(),
            line: f.line,
            rule: f.rule.to_string(),
            message: f.message.clone(),
            text: lines
                .as_ref()
                .map_or(String::new(), |l| l.text(f.line).to_string()),
        });
        let _ = writeln!(out, "{}", json(&entry));
    }
    let _ = writeln!(out, "-->");
    out
}

#[cfg(test)]
mod tests {
    use super::LineIndex;

    #[test]
    fn relocate_prefers_the_nearest_matching_line() {
        let lines = LineIndex::new("a\n  x\nb\nx\nc\nx\n");
        assert_eq!(lines.relocate(2, "x"), Some(2));
        assert_eq!(lines.relocate(3, "x"), Some(2));
        assert_eq!(lines.relocate(5, "x"), Some(4));
        assert_eq!(lines.relocate(9, "x"), Some(6));
        assert_eq!(lines.relocate(0, "x"), Some(2));
        assert_eq!(lines.relocate(1, "gone"), None);
        assert_eq!(lines.text(2), "x");
        assert_eq!(lines.text(7), "");
    }
}
