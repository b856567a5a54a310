//! What to run after a FAIL: the next commands, in the order that finds the cause soonest.

use super::{NoiseFloor, Options, RunConfig, Series, Verdict, DEFAULT_METRIC};

/// A path as a shell word.
fn shell_word(p: &std::path::Path) -> String {
    let s = p.display().to_string();
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:%,+@".contains(c))
    {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// What to run after a FAIL, in order: make the runs compute the same thing, measure the
/// run-to-run variation with a second-seed baseline (`--noise`), then dump one step of each
/// run and let `modelzoo diff` name the op that drifted (docs/diff.md).
pub(super) fn next_steps(
    baseline: &Series,
    candidate: &Series,
    verdict: &Verdict,
    config: &RunConfig,
    noise: Option<&NoiseFloor>,
    options: &Options,
) -> Vec<String> {
    let (b, c) = (shell_word(&baseline.path), shell_word(&candidate.path));
    let mut steps = Vec::new();
    if !config.differences.is_empty() {
        steps.push(format!(
            "make the two runs compute the same thing first: they differ in {} (see the run configuration above); rerun one with the other's settings and compare again",
            config
                .differences
                .iter()
                .map(|d| d.key.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !verdict.rule_pass || noise.is_some_and(|n| n.gate) {
        if noise.is_none() {
            let metric = if options.metric_fallback && options.metric == DEFAULT_METRIC {
                String::new()
            } else {
                format!(" --metric {}", options.metric)
            };
            steps.push(format!(
                "measure run-to-run variation: run the baseline's training again on its device with the same flags and another seed (e.g. --seed 2), then: modelzoo compare --baseline {b} --candidate {c}{metric} --noise <that run's log>"
            ));
        }
        steps.push(
            "dump one training step of each run (same seed, data and flags; only the device differs): run_<model> … --step 1 --dump dumps/cuda on the baseline's device and run_<model> … --step 1 --dump dumps/sdaa on the candidate's (a Python script: modelzoo_probe.dump, docs/diff.md)".to_string(),
        );
        steps.push(
            "find the op that drifted: modelzoo diff --baseline dumps/cuda --candidate dumps/sdaa --report-dir diff-report".to_string(),
        );
    } else {
        steps.push(
            "the steps compared pass the rule, but the runs are not the same length: run the shorter one to the end of its schedule, or judge the steps compared with --allow-partial (or a lower --min-coverage)".to_string(),
        );
    }
    steps
}
