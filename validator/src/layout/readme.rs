//! The model README's rules (adaptation guide §3.3, §3.6): its sections, a results table,
//! the documented arguments, no placeholders left.

use std::path::Path;

use super::Finding;
use crate::markdown;

pub(super) fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let is_ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !is_ident(before) && !is_ident(after)
    })
}

/// An argument is documented by an entry for it (a table row starting with its name, or its
/// `--name`), not by the word appearing in prose ("每个训练 step 的样本数量" documents no `step`).
pub(super) fn check_documented(
    readme: &Path,
    lines: &[markdown::Line],
    wanted: &[&str],
    out: &mut Vec<Finding>,
) {
    let entries = markdown::argument_entries(lines);
    let absent: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|a| !entries.iter().any(|e| e == a))
        .collect();
    if !absent.is_empty() {
        out.push(Finding {
            path: readme.to_path_buf(),
            line: None,
            rule: "args.documented",
            message: format!(
                "arguments not documented: {} — add a table row for each (`| --name | default | meaning |`)",
                absent.join(", ")
            ),
        });
    }
}

/// The model README's rules: its sections, a table in the results section, no placeholders.
pub(super) fn check_model_readme(readme: &Path, text: &str, out: &mut Vec<Finding>) {
    let lines = markdown::scan(text);
    check_sections(readme, &lines, out);
    check_results_table(readme, &lines, out);
    check_placeholders(readme, &lines, out);
}

/// Adaptation guide §3.6 item 5: the results are given as a table (arguments and accuracy).
/// A README without a results section at all is `readme.sections`' finding, not this one.
pub(super) fn check_results_table(readme: &Path, lines: &[markdown::Line], out: &mut Vec<Finding>) {
    let keys = README_SECTIONS
        .iter()
        .find(|(name, _)| *name == "training results")
        .map(|(_, keys)| *keys)
        .unwrap_or_default();
    let results: Vec<markdown::Section> = markdown::sections(lines)
        .into_iter()
        .filter(|s| {
            let title = s.title.to_lowercase();
            keys.iter().any(|k| title.contains(k))
        })
        .collect();
    let Some(first) = results.first() else {
        return;
    };
    if results
        .iter()
        .any(|s| markdown::has_table(&lines[s.body.clone()]))
    {
        return;
    }
    out.push(Finding {
        path: readme.to_path_buf(),
        line: Some(first.line),
        rule: "readme.results-table",
        message: format!(
            "the training results section (line {}: `{} {}`) has no table: add one row per run with its arguments (cards, batch_size, epoch, AMP) and the accuracy reached on SDAA beside CUDA (adaptation guide §3.6 item 5)",
            first.line,
            "#".repeat(first.level),
            first.title
        ),
    });
}

/// Placeholders left in a README (a scaffold's `TODO`s): one finding naming their lines.
pub(super) fn check_placeholders(readme: &Path, lines: &[markdown::Line], out: &mut Vec<Finding>) {
    let found = markdown::placeholders(lines);
    if found.is_empty() {
        return;
    }
    let mut words: Vec<&str> = found.iter().map(|(_, w)| w.as_str()).collect();
    words.sort();
    words.dedup();
    const SHOWN: usize = 10;
    let mut at: Vec<String> = found
        .iter()
        .take(SHOWN)
        .map(|(n, _)| n.to_string())
        .collect();
    if found.len() > SHOWN {
        at.push(format!("… ({} lines in all)", found.len()));
    }
    out.push(Finding {
        path: readme.to_path_buf(),
        // The lines are in the message; `path: readme.placeholders:` stays the line's start
        // (what scripts and `modelzoo new`'s tests match).
        line: None,
        rule: "readme.placeholders",
        message: format!(
            "unfinished: placeholder{} {} on line{} {} — replace each with the real content",
            if words.len() == 1 { "" } else { "s" },
            words.join(", "),
            if found.len() == 1 { "" } else { "s" },
            at.join(", ")
        ),
    });
}

/// The README sections of adaptation guide §3.6: (English name, heading keywords).
pub const README_SECTIONS: &[(&str, &[&str])] = &[
    (
        "model introduction",
        &[
            "模型概述",
            "模型介绍",
            "模型简介",
            "简介",
            "概述",
            "introduction",
            "overview",
            "model description",
        ],
    ),
    (
        "dataset preparation",
        &[
            "准备数据集",
            "数据集",
            "数据准备",
            "dataset",
            "data preparation",
        ],
    ),
    (
        "environment (Docker) preparation",
        &["构建环境", "环境准备", "环境搭建", "docker", "environment"],
    ),
    (
        "start training",
        &[
            "启动训练",
            "开始训练",
            "start training",
            "launch training",
            "run training",
            "training the model",
            "how to train",
        ],
    ),
    (
        "training results",
        &[
            "训练结果",
            "精度结果",
            "training results",
            "results",
            "accuracy",
        ],
    ),
];

/// Markdown ATX headings outside fenced code blocks and HTML comments, lower-cased, numbering
/// kept.
fn headings(lines: &[markdown::Line]) -> Vec<String> {
    markdown::sections(lines)
        .into_iter()
        .map(|s| s.title.to_lowercase())
        .collect()
}

pub(super) fn check_sections(readme: &Path, lines: &[markdown::Line], out: &mut Vec<Finding>) {
    let heads = headings(lines);
    let absent: Vec<String> = README_SECTIONS
        .iter()
        .filter(|(_, keys)| !heads.iter().any(|h| keys.iter().any(|k| h.contains(k))))
        .map(|(name, keys)| format!("{name} (e.g. `## {}` or `## {}`)", keys[0], title_of(keys)))
        .collect();
    if !absent.is_empty() {
        out.push(Finding {
            path: readme.to_path_buf(),
            line: None,
            rule: "readme.sections",
            message: format!("missing sections: {}", absent.join("; ")),
        });
    }
}

/// The first English keyword of a section, capitalised, for the hint.
fn title_of(keys: &[&str]) -> String {
    let k = keys
        .iter()
        .find(|k| k.is_ascii())
        .copied()
        .unwrap_or(keys[0]);
    let mut c = k.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_ignore_code_fences_and_hash_words() {
        let text = "# Title\n```\n# not a heading\n```\n#hashtag\n## 2.4 启动训练\n";
        assert_eq!(
            headings(&markdown::scan(text)),
            vec!["title", "2.4 启动训练"]
        );
    }

    #[test]
    fn contains_word_respects_identifier_boundaries() {
        assert!(contains_word("--step N", "step"));
        assert!(!contains_word("steps", "step"));
        assert!(!contains_word("max_step", "step"));
        assert!(contains_word("`lr`", "lr"));
    }
}
