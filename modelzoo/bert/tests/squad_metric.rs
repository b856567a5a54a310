//! SQuAD v1.1 scoring against the official `evaluate-v1.1.py`: its `normalize_answer`,
//! `exact_match_score` and `f1_score` (copied verbatim into the Python below, run with the
//! workspace's .venv python) give the same normalised strings and scores as
//! `modelzoo_bert::data::squad` on answers with punctuation, articles, case, extra
//! whitespace, repeated tokens, non-ASCII letters and empty results. Tolerance: 1e-12 on F1
//! (both sides compute the same ratio in f64).

use std::process::Command;

use modelzoo_bert::data::squad::{exact_match, f1, max_over, normalize_answer};

const OFFICIAL: &str = r#"
import json, re, string, sys
from collections import Counter

def normalize_answer(s):
    def remove_articles(text):
        return re.sub(r'\b(a|an|the)\b', ' ', text)
    def white_space_fix(text):
        return ' '.join(text.split())
    def remove_punc(text):
        exclude = set(string.punctuation)
        return ''.join(ch for ch in text if ch not in exclude)
    def lower(text):
        return text.lower()
    return white_space_fix(remove_articles(remove_punc(lower(s))))

def f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1

def exact_match_score(prediction, ground_truth):
    return (normalize_answer(prediction) == normalize_answer(ground_truth))

pairs = json.load(sys.stdin)
print(json.dumps([[normalize_answer(p), normalize_answer(t), float(exact_match_score(p, t)),
                   float(f1_score(p, t))] for p, t in pairs]))
"#;

#[test]
fn normalisation_exact_match_and_f1_equal_the_official_script() {
    let pairs: Vec<(&str, &str)> = vec![
        ("The Eiffel Tower", "eiffel tower"),
        ("the  Eiffel-Tower!", "Eiffel Tower"),
        ("a cat and an owl, the end", "cat owl end"),
        ("theatre", "the atre"),
        ("Denver Broncos", "The Denver Broncos."),
        ("the red river bank", "river bank"),
        ("river river bank", "river bank bank"),
        ("1,000 dollars", "1000 dollars"),
        ("Saint-Étienne", "saint étienne"),
        ("an", "the"),
        ("", "Paris"),
        ("A", "a."),
        ("Paris\tFrance\n", "paris  france"),
        ("an apple a day", "apple day"),
        ("(1984)", "1984"),
        ("Nikola Tesla's lab", "tesla's laboratory"),
    ];
    let mut child = Command::new(modelzoo_testkit::venv_python())
        .args(["-c", OFFICIAL])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run .venv/bin/python");
    {
        use std::io::Write;
        let input = serde_json::to_string(&pairs).unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    let want: Vec<(String, String, f64, f64)> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(want.len(), pairs.len());
    for ((p, t), (np, nt, em, f)) in pairs.iter().zip(&want) {
        assert_eq!(&normalize_answer(p), np, "normalize {p:?}");
        assert_eq!(&normalize_answer(t), nt, "normalize {t:?}");
        assert_eq!(exact_match(p, t), *em, "exact match {p:?} / {t:?}");
        assert!(
            (f1(p, t) - f).abs() < 1e-12,
            "f1 {p:?} / {t:?}: {} vs {f}",
            f1(p, t)
        );
    }
    // Known values by hand: 2 shared of 3 predicted and 2 true tokens, F1 = 0.8; repeated
    // tokens count once per occurrence: "river river bank" vs "river bank bank" share 2 of 3.
    assert!((f1("the red river bank", "river bank") - 0.8).abs() < 1e-12);
    assert!((f1("river river bank", "river bank bank") - 2.0 / 3.0).abs() < 1e-12);
    // The best over the given answers (metric_max_over_ground_truths).
    let answers = ["London".to_string(), "the paris".to_string()];
    assert_eq!(max_over(exact_match, "Paris", &answers), 1.0);
    assert_eq!(max_over(f1, "Rome", &answers), 0.0);
}
