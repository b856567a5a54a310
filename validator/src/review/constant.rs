//! results.constant: a comparison script that prints or assigns its MeanRelativeError /
//! MeanAbsoluteError as constants always "passes" whatever the logs hold.

use std::sync::OnceLock;

use regex::Regex;

use super::files::{line_of, read_text};
use super::Context;
use crate::finding::Finding;

/// Python files that compare losses: `loss.py`, `compare_loss.py`, `*loss*.py`, `*compare*.py`.
fn is_comparison_script(name: &str) -> bool {
    let n = name.to_lowercase();
    n.ends_with(".py") && (n.contains("loss") || n.contains("compare"))
}

pub(super) fn check(ctx: &Context, out: &mut Vec<Finding>) {
    static ASSIGN: OnceLock<Regex> = OnceLock::new();
    static PRINT: OnceLock<Regex> = OnceLock::new();
    // `mean_relative_error = 0.0004` (a figure's name bound to a number literal).
    let assign = ASSIGN.get_or_init(|| {
        Regex::new(
            r"(?mi)^[ \t]*(mean_?relative_?error|mean_?absolute_?error|mre|mae|relative_error|absolute_error)[ \t]*=[ \t]*(-?(?:\d+\.\d*|\.\d+|\d+)(?:e-?\d+)?)[ \t]*(?:#.*)?$",
        )
        .expect("valid regex")
    });
    // `print("MeanRelativeError: 0.0004")` / `print("MeanRelativeError:", 0.0004)`.
    let print = PRINT.get_or_init(|| {
        Regex::new(
            r#"(?m)print\(\s*f?["'][^"'\n]*Mean(?:Relative|Absolute)Error[^"'\n{]*?(?:(-?\d+\.\d+(?:e-?\d+)?)[^"'\n{]*["']|["']\s*,\s*(-?\d+\.\d+(?:e-?\d+)?)\s*\))"#,
        )
        .expect("valid regex")
    });
    for e in ctx.tree.files() {
        if !is_comparison_script(&e.name()) {
            continue;
        }
        let path = ctx.dir.join(&e.rel);
        let Some(text) = read_text(&path) else {
            continue;
        };
        let hit = assign
            .captures_iter(&text)
            .find(|c| {
                let value: f64 = c[2].parse().unwrap_or(0.0);
                value != 0.0 && !computed_elsewhere(&text, &c[1])
            })
            .map(|c| {
                let m = c.get(0).expect("match");
                (
                    m.start(),
                    format!("`{}` is set to the constant {}", &c[1], &c[2]),
                )
            })
            .or_else(|| {
                print.captures(&text).map(|c| {
                    let m = c.get(0).expect("match");
                    let v = c
                        .get(1)
                        .or_else(|| c.get(2))
                        .map(|m| m.as_str())
                        .unwrap_or("");
                    (
                        m.start(),
                        format!("it prints the constant {v} as the figure"),
                    )
                })
            });
        if let Some((at, what)) = hit {
            out.push(ctx.finding(
                &path,
                Some(line_of(&text, at)),
                "results.constant",
                format!(
                    "a comparison script that does not compute its figure: {what} — it reports the same result whatever the logs hold; compute MeanRelativeError and MeanAbsoluteError from the two logs (as the ModelZoo's loss.py does)"
                ),
            ));
        }
    }
}

/// Whether `name` is also bound to something computed (`name = f(x)`, `name += x`): then a
/// literal is only its start value.
fn computed_elsewhere(text: &str, name: &str) -> bool {
    let Ok(re) = Regex::new(&format!(
        r"(?m)^[ \t]*{}[ \t]*(?:[-+*/]=|=[ \t]*[^-\d. \t\n])",
        regex::escape(name)
    )) else {
        return true;
    };
    re.is_match(text)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert!(super::is_comparison_script("loss.py"));
        assert!(super::is_comparison_script("compare_loss.py"));
        assert!(!super::is_comparison_script("train.py"));
    }
}
