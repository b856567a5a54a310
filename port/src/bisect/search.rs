//! The search: adaptive group testing over the candidate ops, given a probe that says whether
//! a fallback set heals the run. Pure logic, no process is run here.

/// What a probe of one fallback set says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The run matches the baseline with this set fallen back.
    Heals,
    DoesNot,
    /// No more trials (the budget is spent), with why.
    Stop(String),
}

/// The search's result: the set, whether it is minimal, and why it stopped early if it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub ops: Vec<String>,
    pub minimal: bool,
    pub stopped: Option<String>,
}

/// Adaptive group testing over `candidates`, given that falling back all of them heals and
/// falling back none does not (both already seen). Each round probes the culprits found so far
/// (skipped while there are none), then binary-searches the shortest prefix of the remaining
/// candidates that heals together with them: its last op is a culprit. k culprits among n
/// take at most k·(ceil(log2 n) + 1) probes; under a monotone probe the set is minimal.
pub fn find_culprits(candidates: &[String], probe: &mut dyn FnMut(&[String]) -> Probe) -> Found {
    let mut found: Vec<String> = Vec::new();
    let mut rest: Vec<String> = candidates.to_vec();
    let with = |found: &[String], part: &[String]| -> Vec<String> {
        found.iter().chain(part.iter()).cloned().collect()
    };
    loop {
        // Invariant: found ∪ rest heals.
        if rest.is_empty() {
            return Found {
                ops: found,
                minimal: true,
                stopped: None,
            };
        }
        if !found.is_empty() {
            match probe(&found) {
                Probe::Heals => {
                    return Found {
                        ops: found,
                        minimal: true,
                        stopped: None,
                    }
                }
                Probe::DoesNot => {}
                Probe::Stop(why) => {
                    return Found {
                        ops: with(&found, &rest),
                        minimal: false,
                        stopped: Some(why),
                    }
                }
            }
        }
        // The shortest prefix rest[..j] (j >= 1) with found ∪ rest[..j] healing.
        let (mut lo, mut hi) = (1, rest.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match probe(&with(&found, &rest[..mid])) {
                Probe::Heals => hi = mid,
                Probe::DoesNot => lo = mid + 1,
                Probe::Stop(why) => {
                    return Found {
                        ops: with(&found, &rest[..hi]),
                        minimal: false,
                        stopped: Some(why),
                    }
                }
            }
        }
        found.push(rest[lo - 1].clone());
        rest.truncate(lo - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("aten::op{i:02}")).collect()
    }

    /// A fake run: it matches when every culprit is on the CPU; counts the probes.
    fn search(n: usize, culprits: &[usize], max: Option<usize>) -> (Found, usize) {
        let ops = names(n);
        let bad: Vec<String> = culprits.iter().map(|&i| ops[i].clone()).collect();
        let mut probes = 0;
        let found = find_culprits(&ops, &mut |set| {
            if max.is_some_and(|m| probes >= m) {
                return Probe::Stop("--max-runs reached".into());
            }
            probes += 1;
            if bad.iter().all(|b| set.contains(b)) {
                Probe::Heals
            } else {
                Probe::DoesNot
            }
        });
        (found, probes)
    }

    #[test]
    fn finds_exactly_the_culprits_within_the_bound() {
        for n in [1usize, 2, 3, 7, 16, 28, 50, 64] {
            for k in 1..=3.min(n) {
                // Spread the culprits: first, last and middle positions.
                let culprits: Vec<usize> = [0, n - 1, n / 2][..k].to_vec();
                let mut culprits = culprits;
                culprits.sort();
                culprits.dedup();
                let (found, probes) = search(n, &culprits, None);
                let mut want: Vec<String> = culprits.iter().map(|&i| names(n)[i].clone()).collect();
                let mut got = found.ops.clone();
                want.sort();
                got.sort();
                assert_eq!(got, want, "n={n} culprits={culprits:?}");
                assert!(found.minimal && found.stopped.is_none());
                // Plus the two runs `run` makes first (no fallback, all candidates).
                let runs = probes + 2;
                let k = culprits.len() as f64;
                let bound = 2.0 * k * (n as f64).log2() + 4.0;
                assert!(
                    runs as f64 <= bound.max(4.0),
                    "n={n} k={k}: {runs} runs > {bound}"
                );
            }
        }
    }

    #[test]
    fn two_among_fifty_take_few_runs() {
        let (found, probes) = search(50, &[7, 33], None);
        assert_eq!(found.ops.len(), 2);
        assert!(probes + 2 <= 2 * 2 * 6 + 4, "{probes}");
    }

    #[test]
    fn a_budget_returns_the_best_set_so_far() {
        let (found, probes) = search(32, &[3, 20], Some(3));
        assert_eq!(probes, 3);
        assert!(!found.minimal);
        assert_eq!(found.stopped.as_deref(), Some("--max-runs reached"));
        // The best set so far still heals: both culprits are in it.
        assert!(found.ops.contains(&names(32)[3]) && found.ops.contains(&names(32)[20]));
        assert!(found.ops.len() < 32);
    }
}
