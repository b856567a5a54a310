//! The diff of a migrated file, built from where each of its lines came from.
//!
//! The rules know which input line every output line stands for (a rewritten line, a line they
//! added, a line they removed), so the diff needs no search: one pass pairs each output line
//! with its input line and keeps the pair when the text is unchanged. A text diff (Myers, as
//! `similar::TextDiff` runs it) costs O(N·D) for N lines and D changes, which grew with the
//! square of the file on files with rewrites all through them (issue #28: 92 s at 120k lines).
//! The output is the same unified diff, `git apply`-able, as `similar` renders.

use std::fmt::Write as _;

use similar::{udiff::UnifiedHunkHeader, DiffOp};

/// The edit from `old` to `new` (lines with their endings). `origin[j]` is the 1-based `old`
/// line that `new[j]` came from (0: added); empty means line j came from line j. When it does
/// not fit the texts (a rule that lost track), the diff is searched for instead — correct, only
/// slower.
pub(crate) fn line_ops(old: &[&str], new: &[&str], origin: &[usize]) -> Vec<DiffOp> {
    if origin.is_empty() && old.len() != new.len()
        || !origin.is_empty() && origin.len() != new.len()
    {
        return searched(old, new);
    }
    crate::meter::add(new.len() as u64);
    let mut ops = Vec::new();
    // Next unpaired line of each side.
    let (mut oi, mut ni) = (0usize, 0usize);
    for (j, line) in new.iter().enumerate() {
        let from = if origin.is_empty() { j + 1 } else { origin[j] };
        let Some(k) = from.checked_sub(1) else {
            continue;
        };
        if k < oi || old.get(k) != Some(line) {
            continue;
        }
        push_gap(&mut ops, oi..k, ni..j);
        match ops.last_mut() {
            Some(DiffOp::Equal {
                old_index,
                new_index,
                len,
            }) if *old_index + *len == k && *new_index + *len == j => *len += 1,
            _ => ops.push(DiffOp::Equal {
                old_index: k,
                new_index: j,
                len: 1,
            }),
        }
        oi = k + 1;
        ni = j + 1;
    }
    push_gap(&mut ops, oi..old.len(), ni..new.len());
    ops
}

/// A line whose comparisons count as work (see [`crate::meter`]): a searching diff compares
/// O(N·D) of them, and the meter shows it.
struct Counted<'a>(&'a str);

impl PartialEq for Counted<'_> {
    fn eq(&self, other: &Self) -> bool {
        crate::meter::add(1);
        self.0 == other.0
    }
}

/// The diff searched for (Myers): the fallback, metered.
fn searched(old: &[&str], new: &[&str]) -> Vec<DiffOp> {
    let old: Vec<Counted> = old.iter().map(|l| Counted(l)).collect();
    let new: Vec<Counted> = new.iter().map(|l| Counted(l)).collect();
    let mut hook = similar::algorithms::Replace::new(similar::algorithms::Capture::new());
    // The capturing hook never fails.
    let _ = similar::algorithms::myers::diff(&mut hook, &old, 0..old.len(), &new, 0..new.len());
    hook.into_inner().into_ops()
}

/// The op for old lines `o` becoming new lines `n` (neither paired), if any.
fn push_gap(ops: &mut Vec<DiffOp>, o: std::ops::Range<usize>, n: std::ops::Range<usize>) {
    match (o.is_empty(), n.is_empty()) {
        (true, true) => {}
        (false, true) => ops.push(DiffOp::Delete {
            old_index: o.start,
            old_len: o.len(),
            new_index: n.start,
        }),
        (true, false) => ops.push(DiffOp::Insert {
            old_index: o.start,
            new_index: n.start,
            new_len: n.len(),
        }),
        (false, false) => ops.push(DiffOp::Replace {
            old_index: o.start,
            old_len: o.len(),
            new_index: n.start,
            new_len: n.len(),
        }),
    }
}

/// The unified diff (3 lines of context) of `ops`, with file names `a` and `b`; empty when
/// nothing changed. Byte for byte what `similar`'s `unified_diff()` writes.
pub(crate) fn unified(old: &[&str], new: &[&str], ops: &[DiffOp], a: &str, b: &str) -> String {
    let mut out = String::new();
    for group in similar::group_diff_ops(ops.to_vec(), 3) {
        if group.is_empty() {
            continue;
        }
        if out.is_empty() {
            let _ = writeln!(out, "--- {a}\n+++ {b}");
        }
        let _ = writeln!(out, "{}", UnifiedHunkHeader::new(&group));
        for op in &group {
            for change in op.iter_changes(old, new) {
                let _ = write!(out, "{}{}", change.tag(), change.value());
                if !change.value().ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// Old line → new line (1-based) for every old line, and the new text's changed lines as
/// ranges (`3, 8-9`); a line removed maps to the line that now stands where it was.
pub(crate) fn line_map(ops: &[DiffOp], new_len: usize) -> (Vec<usize>, String) {
    let mut map = Vec::new();
    let mut changed: Vec<(usize, usize)> = Vec::new();
    let total_new = new_len.max(1);
    for op in ops {
        match *op {
            DiffOp::Equal { new_index, len, .. } => {
                map.extend((0..len).map(|k| new_index + k + 1));
            }
            DiffOp::Delete {
                old_len, new_index, ..
            } => {
                let at = (new_index + 1).min(total_new);
                map.extend(std::iter::repeat_n(at, old_len));
                changed.push((at, at));
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => changed.push((new_index + 1, new_index + new_len)),
            DiffOp::Replace {
                old_len,
                new_index,
                new_len,
                ..
            } => {
                map.extend((0..old_len).map(|k| new_index + k.min(new_len - 1) + 1));
                changed.push((new_index + 1, new_index + new_len));
            }
        }
    }
    // Ops come in order, so `changed` is sorted; merge touching ranges.
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, b) in changed {
        match merged.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let shown: Vec<String> = merged
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    (map, shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<&str> {
        s.split_inclusive('\n').collect()
    }

    /// What `similar`'s text diff renders, for comparison.
    fn searched(old: &str, new: &str) -> String {
        similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header("a/x.py", "b/x.py")
            .to_string()
    }

    fn built(old: &str, new: &str, origin: &[usize]) -> String {
        let (o, n) = (lines(old), lines(new));
        unified(&o, &n, &line_ops(&o, &n, origin), "a/x.py", "b/x.py")
    }

    #[test]
    fn the_rules_diffs_are_the_text_diffs() {
        let cases: Vec<(&str, &str, Vec<usize>)> = vec![
            // A line rewritten in the middle of a long file, hunks apart.
            (
                "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n",
                "a\nB\nc\nd\ne\nf\ng\nh\ni\nJ\nk\n",
                vec![],
            ),
            // A line added after line 2, another removed.
            (
                "import torch\nx = 1\ny.cuda()\nz\n",
                "import torch\nimport torch_sdaa\nx = 1\nz\n",
                vec![1, 0, 2, 4],
            ),
            // One line becoming two, on the last line without a newline.
            (
                "a\nb\nopt.step()",
                "a\nb\nscaler.step(opt)\nscaler.update()",
                vec![1, 2, 3, 3],
            ),
            // The last line gaining a newline before an added line.
            (
                "import torch",
                "import torch\nimport torch_sdaa\n",
                vec![1, 0],
            ),
        ];
        for (old, new, origin) in cases {
            assert_eq!(
                built(old, new, &origin),
                searched(old, new),
                "{old:?} -> {new:?}"
            );
        }
    }

    #[test]
    fn an_origin_that_does_not_fit_falls_back_to_a_search() {
        assert_eq!(
            built("a\nb\n", "a\nc\nb\n", &[1]),
            searched("a\nb\n", "a\nc\nb\n")
        );
    }

    #[test]
    fn each_new_line_is_compared_with_at_most_its_own_old_line() {
        // A file where every line changes: a searching diff does O(N·D) work here.
        let old: String = (0..2000).map(|i| format!("x{i}.cuda()\n")).collect();
        let new: String = (0..2000).map(|i| format!("x{i}.sdaa()\n")).collect();
        crate::meter::reset();
        let ops = line_ops(&lines(&old), &lines(&new), &[]);
        assert_eq!(crate::meter::steps(), 2000);
        assert_eq!(ops.len(), 1);
        assert_eq!(line_map(&ops, 2000).1, "1-2000");
    }
}
