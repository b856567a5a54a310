//! cards.claim: the card count a README claims against the process count its command and
//! test.sh start.

use super::commands::{Cmd, Commands, Source};
use super::Context;
use crate::finding::Finding;
use crate::markdown;

/// Phrases that claim one card.
const ONE_CARD: &[&str] = &[
    "单机单卡",
    "单卡",
    "单spa",
    "1卡",
    "一卡",
    "single card",
    "single-card",
    "one card",
    "1 card",
    "single device",
];

/// Phrases that claim several (a line with one of them claims no single card).
const MANY_CARDS: &[&str] = &[
    "多卡",
    "四卡",
    "八卡",
    "4卡",
    "8卡",
    "多机",
    "multi-card",
    "multiple cards",
    "4 cards",
    "8 cards",
];

fn is_training(c: &Cmd) -> bool {
    c.script().is_some_and(|(_, s)| {
        let n = s.rsplit('/').next().unwrap_or(s).to_lowercase();
        !(s.contains('$')
            || n.contains("loss")
            || n.contains("plot")
            || n.contains("compare")
            || n == "setup.py")
    })
}

pub(super) fn check(ctx: &Context, cmds: &Commands, out: &mut Vec<Finding>) {
    let Some((readme, text)) = &ctx.readme else {
        return;
    };
    let lines = markdown::scan(text);
    let headings: Vec<usize> = markdown::sections(&lines).iter().map(|s| s.line).collect();
    let readme_cmds: Vec<&Cmd> = cmds
        .all
        .iter()
        .filter(|c| c.source == Source::Readme && is_training(c))
        .collect();

    // A one-card sentence and the first training command after it in its section.
    let claims: Vec<(usize, String)> = lines
        .iter()
        .filter(|l| !l.code)
        .filter_map(|l| {
            let t = l.text.to_lowercase();
            (ONE_CARD.iter().any(|p| t.contains(p)) && !MANY_CARDS.iter().any(|p| t.contains(p)))
                .then(|| (l.no, l.text.trim().to_string()))
        })
        .collect();
    for (i, (no, said)) in claims.iter().enumerate() {
        let next_claim = claims.get(i + 1).map(|c| c.0).unwrap_or(usize::MAX);
        let next_heading = headings
            .iter()
            .copied()
            .find(|h| h > no)
            .unwrap_or(usize::MAX);
        let Some(cmd) = readme_cmds
            .iter()
            .find(|c| c.line >= *no && c.line < next_heading.min(next_claim))
        else {
            continue;
        };
        if let Some((n, shown)) = cmd.processes().filter(|(n, _)| *n > 1) {
            out.push(ctx.finding(
                readme,
                Some(*no),
                "cards.claim",
                format!(
                    "says one card (`{}`) but the command it introduces (line {}) starts {n} processes (`{shown}`) — state the card count the command uses, or give it --nproc_per_node 1",
                    clip(said),
                    cmd.line
                ),
            ));
            continue;
        }
        // The run script the command starts may build its own launch (`os.system("torchrun
        // --nproc_per_node 4 …")`): that is what runs.
        let Some((_, script)) = cmd.script() else {
            continue;
        };
        let script = script.rsplit('/').next().unwrap_or(script);
        let launched = cmds.all.iter().find(|c| {
            c.source == Source::Script
                && c.file
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy() == script)
                && c.processes().is_some_and(|(n, _)| n > 1)
        });
        if let Some(inner) = launched {
            let (n, shown) = inner.processes().unwrap_or_default();
            out.push(ctx.finding(
                readme,
                Some(*no),
                "cards.claim",
                format!(
                    "says one card (`{}`) but the command it introduces (line {}) runs {script}, which starts {n} processes ({}:{}: `{shown}`) — state the card count the run uses, or make the script start one process",
                    clip(said),
                    cmd.line,
                    ctx.rel(&inner.file).display(),
                    inner.line
                ),
            ));
        }
    }

    // test.sh against the README's command.
    if readme_cmds.is_empty() {
        return;
    }
    let count = |c: &Cmd| c.processes().map(|(n, _)| n).unwrap_or(1);
    let readme_counts: Vec<u64> = readme_cmds.iter().map(|c| count(c)).collect();
    for cmd in cmds.all.iter().filter(|c| {
        c.source == Source::Script
            && is_training(c)
            && c.file
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains("test"))
    }) {
        let n = count(cmd);
        if readme_counts.contains(&n) {
            continue;
        }
        let first = readme_cmds[0];
        out.push(ctx.finding(
            &cmd.file,
            Some(cmd.line),
            "cards.claim",
            format!(
                "starts {n} process{} ({}) where the README's training command ({}:{}) starts {} — the logs it writes are not from the run the README documents: make the two agree",
                if n == 1 { "" } else { "es" },
                cmd.processes().map(|(_, s)| format!("`{s}`")).unwrap_or_else(|| "no --nproc_per_node".into()),
                ctx.rel(&first.file).display(),
                first.line,
                readme_counts[0],
            ),
        ));
    }
}

fn clip(s: &str) -> String {
    const MAX: usize = 80;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        s.chars().take(MAX).collect::<String>() + "…"
    }
}
