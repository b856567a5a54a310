//! What each log says about its run — its `PARAMETER` records (model, batch size, world size,
//! lr, seed, precision, memory format … as the script logs them) and the driver's `FINISHED`
//! event (steps, world size, parameters) — compared before the verdict, as msprobe's config
//! check does: two runs that computed different things (a channels-last CPU run against an
//! nchw one) differ by more than the port, and the figures alone do not say so.

use std::collections::BTreeMap;

use serde::Serialize;

/// Keys that name the same fact in different scripts; the first present is used.
const SYNONYMS: &[(&str, &[&str])] = &[
    ("model", &["model_name", "model", "arch"]),
    ("lr", &["lr", "learning_rate"]),
    ("parameters", &["parameters", "num_params"]),
    ("steps", &["steps", "max_steps", "train_steps"]),
    ("epochs", &["epochs", "epoch", "num_train_epochs"]),
];

/// Facts the two runs are meant to differ in: the device is the point of the comparison.
const EXPECTED_TO_DIFFER: &[&str] = &["device"];

/// The facts a comparison needs to trust that both runs computed the same thing, and the keys
/// that state each. Those neither log states are listed as not checked.
const STANDARD: &[(&str, &[&str])] = &[
    ("model", &["model_name", "model", "arch"]),
    ("batch size", &["batch_size", "global_batch_size"]),
    ("world size", &["world_size"]),
    (
        "precision",
        &["precision", "autocast", "amp", "amp_dtype", "dtype"],
    ),
    ("lr", &["lr", "learning_rate"]),
    ("seed", &["seed"]),
    ("memory format", &["memory_format", "channels_last"]),
    ("steps", &["steps", "max_steps", "train_steps"]),
];

/// One fact with the value each log gives.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FactDiff {
    /// The fact (`model`, or the key as logged).
    pub fact: String,
    /// The key each log used (`model_name`, or `model_name` / `arch` when they differ).
    pub key: String,
    pub baseline: String,
    pub candidate: String,
}

/// The two runs' configurations side by side.
#[derive(Debug, Clone, Serialize, Default)]
pub struct RunConfig {
    /// Every fact each log states (key as logged → value as written).
    pub baseline: BTreeMap<String, String>,
    pub candidate: BTreeMap<String, String>,
    /// Facts both state with different values: the runs did not compute the same thing.
    pub differences: Vec<FactDiff>,
    /// Facts both state with the same value.
    pub same: Vec<FactDiff>,
    /// Facts only one log states (`key = value`).
    pub only_baseline: Vec<String>,
    pub only_candidate: Vec<String>,
    /// Facts meant to differ (the device), shown for the record.
    pub expected: Vec<FactDiff>,
    /// Standard facts (model, batch size, world size, precision, lr, seed, memory format,
    /// steps) neither log states: not checked.
    pub unstated: Vec<String>,
}

impl RunConfig {
    /// Whether either log said anything about its run.
    pub fn any(&self) -> bool {
        !(self.baseline.is_empty() && self.candidate.is_empty())
    }
}

/// The fact a key states, and that key's rank among its synonyms.
fn fact_of(key: &str) -> (String, usize) {
    for (fact, keys) in SYNONYMS {
        if let Some(i) = keys.iter().position(|k| *k == key) {
            return (fact.to_string(), i);
        }
    }
    (key.to_string(), 0)
}

/// fact → (key used, value): the highest-ranked synonym present wins.
fn by_fact(facts: &BTreeMap<String, String>) -> BTreeMap<String, (String, String)> {
    let mut out: BTreeMap<String, (usize, String, String)> = BTreeMap::new();
    for (k, v) in facts {
        let (fact, rank) = fact_of(k);
        match out.get(&fact) {
            Some((r, _, _)) if *r <= rank => {}
            _ => {
                out.insert(fact, (rank, k.clone(), v.clone()));
            }
        }
    }
    out.into_iter().map(|(f, (_, k, v))| (f, (k, v))).collect()
}

/// Whether two logged values say the same: equal text, equal numbers (`0.1` and `0.10`, `32`
/// and `32.0`), or the same boolean / none in Python's or JSON's spelling.
pub fn same_value(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    if a == b {
        return true;
    }
    if let (Ok(x), Ok(y)) = (a.parse::<f64>(), b.parse::<f64>()) {
        return x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs());
    }
    let norm = |s: &str| match s.to_ascii_lowercase().as_str() {
        "true" => "true".to_string(),
        "false" => "false".to_string(),
        "none" | "null" => "none".to_string(),
        _ => s.to_string(),
    };
    norm(a) == norm(b)
}

/// Compare what the two logs say about their runs.
pub fn run_config(
    baseline: &BTreeMap<String, String>,
    candidate: &BTreeMap<String, String>,
) -> RunConfig {
    let (b, c) = (by_fact(baseline), by_fact(candidate));
    let mut cfg = RunConfig {
        baseline: baseline.clone(),
        candidate: candidate.clone(),
        ..RunConfig::default()
    };
    for (fact, (kb, vb)) in &b {
        match c.get(fact) {
            Some((kc, vc)) => {
                let d = FactDiff {
                    fact: fact.clone(),
                    key: if kb == kc {
                        kb.clone()
                    } else {
                        format!("{kb} / {kc}")
                    },
                    baseline: vb.clone(),
                    candidate: vc.clone(),
                };
                if EXPECTED_TO_DIFFER.contains(&fact.as_str()) {
                    cfg.expected.push(d);
                } else if same_value(vb, vc) {
                    cfg.same.push(d);
                } else {
                    cfg.differences.push(d);
                }
            }
            None => cfg.only_baseline.push(format!("{kb} = {vb}")),
        }
    }
    for (fact, (kc, vc)) in &c {
        if !b.contains_key(fact) {
            cfg.only_candidate.push(format!("{kc} = {vc}"));
        }
    }
    let stated = |keys: &[&str]| {
        keys.iter()
            .any(|k| baseline.contains_key(*k) || candidate.contains_key(*k))
    };
    cfg.unstated = STANDARD
        .iter()
        .filter(|(_, keys)| !stated(keys))
        .map(|(label, _)| label.to_string())
        .collect();
    cfg
}

/// The configuration in lines, as printed before the verdict (empty when neither log says
/// anything about its run and there is nothing to say but that).
pub fn lines(cfg: &RunConfig) -> Vec<String> {
    let mut out = Vec::new();
    if !cfg.any() {
        out.push(
            "run configuration: neither log has PARAMETER records, so nothing about the two runs' settings (model, batch size, precision, lr, seed, memory format, steps) could be checked".to_string(),
        );
        return out;
    }
    out.push(format!(
        "run configuration (the logs' PARAMETER and FINISHED records): {} fact(s) differ, {} the same",
        cfg.differences.len(),
        cfg.same.len()
    ));
    for d in &cfg.differences {
        out.push(format!(
            "  differs: {} ({}): baseline {}, candidate {}",
            d.fact, d.key, d.baseline, d.candidate
        ));
    }
    if !cfg.same.is_empty() {
        let names: Vec<&str> = cfg.same.iter().map(|d| d.fact.as_str()).collect();
        out.push(format!("  same in both: {}", names.join(", ")));
    }
    for d in &cfg.expected {
        out.push(format!(
            "  {} (meant to differ): baseline {}, candidate {}",
            d.fact, d.baseline, d.candidate
        ));
    }
    if !cfg.only_baseline.is_empty() {
        out.push(format!(
            "  only the baseline states: {}",
            cfg.only_baseline.join(", ")
        ));
    }
    if !cfg.only_candidate.is_empty() {
        out.push(format!(
            "  only the candidate states: {}",
            cfg.only_candidate.join(", ")
        ));
    }
    if !cfg.unstated.is_empty() {
        out.push(format!(
            "  not stated in either log, so not checked: {}",
            cfg.unstated.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn differences_synonyms_and_what_was_not_checked() {
        let b = map(&[
            ("batch_size", "32"),
            ("memory_format", "nchw"),
            ("model_name", "resnet18"),
            ("device", "cuda"),
            ("lr", "0.1"),
            ("autocast", "True"),
        ]);
        let c = map(&[
            ("batch_size", "32.0"),
            ("memory_format", "nhwc"),
            ("arch", "resnet18"),
            ("device", "sdaa"),
            ("autocast", "true"),
            ("seed", "42"),
        ]);
        let cfg = run_config(&b, &c);
        assert_eq!(
            cfg.differences,
            vec![FactDiff {
                fact: "memory_format".into(),
                key: "memory_format".into(),
                baseline: "nchw".into(),
                candidate: "nhwc".into()
            }]
        );
        let same: Vec<&str> = cfg.same.iter().map(|d| d.fact.as_str()).collect();
        assert_eq!(same, ["autocast", "batch_size", "model"]);
        assert_eq!(cfg.expected[0].candidate, "sdaa");
        assert_eq!(cfg.only_baseline, ["lr = 0.1"]);
        assert_eq!(cfg.only_candidate, ["seed = 42"]);
        assert_eq!(cfg.unstated, ["world size", "steps"]);
        assert!(same_value("0.1", "0.10000000000000001") && !same_value("0.1", "0.01"));
        let text = lines(&cfg).join("\n");
        assert!(
            text.contains("differs: memory_format (memory_format): baseline nchw, candidate nhwc"),
            "{text}"
        );
        assert!(lines(&RunConfig::default())[0].contains("neither log has PARAMETER records"));
    }
}
