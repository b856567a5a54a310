//! Unit tests of compare's pairing, figures and rules on series built in memory.

use super::*;

fn steps(keys: &[(u64, u64)], start: f64) -> Steps {
    let mut s = Steps::new();
    for (i, &(e, it)) in keys.iter().enumerate() {
        s.push(Some(e), Some(it), None, start + i as f64);
    }
    s
}

#[test]
fn key_pairing_lists_steps_in_one_log_only() {
    let b = steps(&[(0, 0), (0, 1), (0, 2), (0, 3)], 1.0);
    let c = steps(&[(0, 2), (0, 3), (0, 4), (0, 5), (1, 0)], 10.0);
    let (pairs, ob, oc) = pair_by_key(&b, &c);
    assert_eq!(pairs.len(), 2);
    assert_eq!(pairs.get(0).baseline, 3.0);
    assert_eq!(pairs.get(0).candidate, 10.0);
    assert_eq!(ob.count, 2);
    assert_eq!(oc.count, 3);
    assert_eq!(oc.ranges.len(), 1, "{:?}", oc.ranges);
    assert_eq!(
        oc.ranges[0].to_string(),
        "epoch 0 iteration 4 .. epoch 1 iteration 0 (3 steps)"
    );
    assert_eq!(ob.ranges.len(), 1, "{:?}", ob.ranges);
    assert_eq!(
        ob.ranges[0].to_string(),
        "epoch 0 iteration 0 .. epoch 0 iteration 1 (2 steps)"
    );
}

#[test]
fn repeated_keys_pair_by_occurrence() {
    // Unnumbered values (plain `loss x` lines) pair in log order.
    let mk = |vals: &[f64]| {
        let mut s = Steps::new();
        for &v in vals {
            s.push(None, None, None, v);
        }
        s
    };
    let (b, c) = (mk(&[3.0, 2.0, 1.0]), mk(&[3.5, 2.5]));
    let (pairs, ob, oc) = pair_by_key(&b, &c);
    assert_eq!(
        pairs
            .iter()
            .map(|p| (p.baseline, p.candidate))
            .collect::<Vec<_>>(),
        vec![(3.0, 3.5), (2.0, 2.5)]
    );
    assert_eq!((ob.count, oc.count), (1, 0));
    // A log that goes back (a resumed run) pairs its repeats by occurrence as well.
    let b = steps(&[(0, 0), (0, 1), (0, 1), (0, 2)], 1.0);
    let c = steps(&[(0, 0), (0, 1), (0, 2), (0, 1)], 10.0);
    let (pairs, ob, oc) = pair_by_key(&b, &c);
    let got: Vec<(String, f64, f64)> = pairs
        .iter()
        .map(|p| (p.key.to_string(), p.baseline, p.candidate))
        .collect();
    assert_eq!(
        got,
        [
            ("epoch 0 iteration 0".to_string(), 1.0, 10.0),
            ("epoch 0 iteration 1".to_string(), 2.0, 11.0),
            ("epoch 0 iteration 1 (occurrence 2)".to_string(), 3.0, 13.0),
            ("epoch 0 iteration 2".to_string(), 4.0, 12.0),
        ]
    );
    assert_eq!((ob.count, oc.count), (0, 0));
}

#[test]
fn figures_and_rules_on_known_errors() {
    let pairs = Pairs::from_pairs((0..20).map(|i| Pair {
        key: Key::new(Some(0), Some(i), None),
        baseline: 2.0,
        candidate: if i % 2 == 0 { 2.2 } else { 1.8 },
    }));
    let cov = |n| Coverage {
        baseline_steps: n,
        candidate_steps: n,
        min_coverage: DEFAULT_MIN_COVERAGE,
    };
    let f = figures(&pairs, cov(20), 10);
    assert!(f.mean_rel_err_signed.abs() < 1e-15);
    assert!((f.mean_rel_err_abs - 0.1).abs() < 1e-12);
    assert!((f.max_abs_err.value - 0.2).abs() < 1e-12);
    assert_eq!(f.max_abs_err.index, 0);
    // Signed means cancel: loss.py's rule passes a ±10% error, rel1 judges the tail mean.
    assert!(verdict(Rule::ModelzooLoss, &f, vec![]).pass);
    assert!(verdict(Rule::Rel1 { threshold: 0.01 }, &f, vec![]).pass);
    let first19 = Pairs::from_pairs(pairs.iter().take(19));
    let f1 = figures(&first19, cov(19), 1);
    assert!(!verdict(Rule::Rel1 { threshold: 0.01 }, &f1, vec![]).pass);
    // A NaN early on (outside the tail) still fails both rules.
    let diverged = Pairs::from_pairs(pairs.iter().enumerate().map(|(i, mut p)| {
        if i == 3 {
            p.candidate = f64::NAN;
        }
        p
    }));
    let f2 = figures(&diverged, cov(20), 10);
    assert_eq!(f2.non_finite_steps, 1);
    assert!(!verdict(Rule::Rel1 { threshold: 0.01 }, &f2, vec![]).pass);
    assert!(!verdict(Rule::ModelzooLoss, &f2, vec![]).pass);
}
