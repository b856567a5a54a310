//! SQuAD v1.1 span extraction: `--dataset_path DIR` holding `train-v1.1.json` and
//! `dev-v1.1.json` (or `train.json` / `dev.json`) in the official format. Each question
//! becomes one or more features `[CLS] question [SEP] context window [SEP]`: the question cut
//! to `--max_query_length` tokens, the context in windows `--doc_stride` tokens apart (as
//! Hugging Face's `run_qa.py`); a training feature's target is the first answer's token span,
//! or `[CLS]` (position 0) when its window does not hold it. Evaluation takes, per question,
//! the best span over its windows (start + end logit, end ≥ start, at most
//! `--max_answer_length` tokens, 20 best starts × 20 best ends per window), cuts its text out
//! of the context by the tokens' character offsets and scores it with the official
//! `evaluate-v1.1.py`'s exact match and F1 ([`exact_match`], [`f1`]) against every given
//! answer.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use modelzoo_engine::BatchError;
use serde::Deserialize;
use tch::Tensor;

use super::{stack, BertBatch, DataError, Samples, Target};
use crate::tokenizer::WordPiece;

/// Candidate starts and ends per window at evaluation (Hugging Face's `n_best_size`).
const N_BEST: usize = 20;

#[derive(Deserialize)]
struct File {
    data: Vec<Article>,
    #[serde(default)]
    version: Option<String>,
}

#[derive(Deserialize)]
struct Article {
    paragraphs: Vec<Paragraph>,
}

#[derive(Deserialize)]
struct Paragraph {
    context: String,
    qas: Vec<Qa>,
}

#[derive(Deserialize)]
struct Qa {
    id: String,
    question: String,
    answers: Vec<Answer>,
    #[serde(default)]
    is_impossible: bool,
}

#[derive(Deserialize)]
struct Answer {
    text: String,
    answer_start: usize,
}

/// One question on its paragraph, tokenized.
#[derive(Debug, Clone)]
pub struct Example {
    pub id: String,
    pub context: Arc<String>,
    /// The given answers' texts (the scoring references).
    pub answers: Vec<String>,
    question_ids: Vec<u32>,
    context_ids: Arc<Vec<u32>>,
    /// Character offsets of the context tokens into `context`.
    context_offsets: Arc<Vec<(usize, usize)>>,
    /// Token span of the first answer (training target), if it could be located.
    answer_tokens: Option<(usize, usize)>,
}

/// One window of one example.
#[derive(Debug, Clone, Copy)]
struct Feature {
    example: usize,
    /// Context tokens `lo..hi` are in this window.
    lo: usize,
    hi: usize,
    start: i64,
    end: i64,
}

/// The features of one split.
pub struct SquadSamples {
    pub examples: Vec<Example>,
    features: Vec<Feature>,
    seq: usize,
    cls: u32,
    sep: u32,
    pad: u32,
}

/// The train and dev splits.
pub struct SquadData {
    pub train: SquadSamples,
    pub val: SquadSamples,
    pub source: String,
}

/// How questions become features.
#[derive(Debug, Clone, Copy)]
pub struct Windows {
    pub seq: usize,
    pub max_query: usize,
    pub stride: usize,
}

/// `s[start..end]` in characters.
fn char_slice(s: &str, start: usize, end: usize) -> &str {
    let mut idx = s
        .char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(s.len()));
    let b0 = idx.nth(start).unwrap_or(s.len());
    let b1 = if end > start {
        idx.nth(end - start - 1).unwrap_or(s.len())
    } else {
        b0
    };
    &s[b0..b1.max(b0)]
}

/// The (first) answer of question `id` is the context's text at `answer_start`, as SQuAD
/// v1.1 guarantees: a span past the context, or other text there (an offset counted in bytes,
/// a file edited by hand), would train on the wrong target without a word. Whitespace runs
/// compare as one space.
fn check_answer(context: &str, id: &str, answer: &str, start: usize) -> Result<(), String> {
    let n = context.chars().count();
    let len = answer.chars().count();
    if answer.trim().is_empty() {
        return Err(format!(
            "question {id:?}: its answer is empty; give the answer's text"
        ));
    }
    if start + len > n {
        return Err(format!(
            "question {id:?}: answer {answer:?} at answer_start {start} ({len} characters) runs past its context ({n} characters); answer_start counts characters of the context"
        ));
    }
    let found = char_slice(context, start, start + len);
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if words(found) != words(answer) {
        return Err(format!(
            "question {id:?}: the context at answer_start {start} reads {found:?}, not its answer {answer:?}; answer_start counts characters of the context"
        ));
    }
    Ok(())
}

fn read_file(path: &Path, tok: &WordPiece) -> Result<Vec<Example>, DataError> {
    let bad = |message: String| DataError::Format {
        path: path.to_path_buf(),
        message,
    };
    let text = super::read_text(path)?;
    let file: File = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "not a SQuAD v1.1 file ({e}); expected {{\"data\": [{{\"paragraphs\": [{{\"context\", \"qas\": [{{\"id\", \"question\", \"answers\": [{{\"text\", \"answer_start\"}}]}}]}}]}}]}}"
        ))
    })?;
    if file.version.as_deref().is_some_and(|v| v.starts_with("v2")) {
        return Err(bad(format!(
            "SQuAD {} (unanswerable questions) is not supported; give SQuAD v1.1",
            file.version.unwrap_or_default()
        )));
    }
    let mut out = Vec::new();
    for article in file.data {
        for p in article.paragraphs {
            let enc = tok.encode(&p.context)?;
            let context = Arc::new(p.context);
            let (ids, offsets) = (Arc::new(enc.ids), Arc::new(enc.offsets));
            for qa in p.qas {
                if qa.is_impossible || qa.answers.is_empty() {
                    return Err(bad(format!(
                        "question {:?} has no answer: SQuAD v2.0 (unanswerable questions) is not supported; give SQuAD v1.1",
                        qa.id
                    )));
                }
                let first = &qa.answers[0];
                let s = first.answer_start;
                let e = s + first.text.chars().count();
                check_answer(&context, &qa.id, &first.text, s).map_err(&bad)?;
                let tok_start = offsets.iter().position(|&(_, end)| end > s);
                let tok_end = offsets.iter().rposition(|&(start, _)| start < e);
                let answer_tokens = match (tok_start, tok_end) {
                    (Some(a), Some(b)) if a <= b => Some((a, b)),
                    _ => {
                        return Err(bad(format!(
                            "question {:?}: no token of the context covers its answer {:?} at answer_start {s} (the tokenizer drops that text); fix or remove the question",
                            qa.id, first.text
                        )))
                    }
                };
                out.push(Example {
                    id: qa.id,
                    context: Arc::clone(&context),
                    answers: qa.answers.into_iter().map(|a| a.text).collect(),
                    question_ids: tok.ids(&qa.question)?,
                    context_ids: Arc::clone(&ids),
                    context_offsets: Arc::clone(&offsets),
                    answer_tokens,
                });
            }
        }
    }
    if out.is_empty() {
        return Err(bad("no questions".into()));
    }
    Ok(out)
}

impl SquadSamples {
    /// The features of `examples`: questions cut to `w.max_query` tokens, contexts in windows.
    fn new(mut examples: Vec<Example>, w: Windows, tok: &WordPiece) -> Result<Self, DataError> {
        let mut features = Vec::new();
        for (i, ex) in examples.iter_mut().enumerate() {
            ex.question_ids.truncate(w.max_query);
            let q = ex.question_ids.len();
            let room = w.seq.checked_sub(q + 3).filter(|r| *r > 0).ok_or_else(|| {
                DataError::Other(format!(
                    "--max_seq_length {} leaves no room for the context after a question of {q} tokens; raise it or lower --max_query_length",
                    w.seq
                ))
            })?;
            let n = ex.context_ids.len();
            let mut lo = 0;
            loop {
                let hi = (lo + room).min(n);
                let (start, end) = match ex.answer_tokens {
                    Some((a, b)) if a >= lo && b < hi => {
                        ((a - lo + q + 2) as i64, (b - lo + q + 2) as i64)
                    }
                    _ => (0, 0),
                };
                features.push(Feature {
                    example: i,
                    lo,
                    hi,
                    start,
                    end,
                });
                if hi >= n {
                    break;
                }
                lo += w.stride.min(hi - lo).max(1);
            }
        }
        Ok(SquadSamples {
            examples,
            features,
            seq: w.seq,
            cls: tok.cls,
            sep: tok.sep,
            pad: tok.pad,
        })
    }

    /// The example feature `f` belongs to.
    pub fn example_of(&self, f: usize) -> usize {
        self.features[f].example
    }

    /// The best answer of feature `f` from its start / end logits (one row each, `seq`
    /// long): (score, text), or `None` when no valid span lies in its context window.
    pub fn best_span(
        &self,
        f: usize,
        start: &[f32],
        end: &[f32],
        max_answer: usize,
    ) -> Option<(f32, String)> {
        let ft = &self.features[f];
        let ex = &self.examples[ft.example];
        let p0 = ex.question_ids.len() + 2;
        let p1 = p0 + (ft.hi - ft.lo);
        let top = |logits: &[f32]| {
            let mut idx: Vec<usize> = (p0..p1.min(logits.len())).collect();
            idx.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
            idx.truncate(N_BEST);
            idx
        };
        let mut best: Option<(f32, usize, usize)> = None;
        for &s in &top(start) {
            for &e in &top(end) {
                if e < s || e - s + 1 > max_answer {
                    continue;
                }
                let score = start[s] + end[e];
                if best.is_none_or(|(b, _, _)| score > b) {
                    best = Some((score, s, e));
                }
            }
        }
        let (score, s, e) = best?;
        let offsets = &ex.context_offsets;
        let (c0, c1) = (offsets[ft.lo + s - p0].0, offsets[ft.lo + e - p0].1);
        Some((score, char_slice(&ex.context, c0, c1).to_string()))
    }

    /// Features, for a summary line.
    pub fn features(&self) -> usize {
        self.features.len()
    }
}

impl Samples for SquadSamples {
    fn len(&self) -> usize {
        self.features.len()
    }

    fn max_token_id(&self) -> u32 {
        let seqs = self
            .examples
            .iter()
            .flat_map(|e| [e.question_ids.as_slice(), e.context_ids.as_slice()]);
        super::max_id(&[self.cls, self.sep, self.pad], seqs)
    }

    fn batch(&self, picks: &[(usize, u64)]) -> Result<BertBatch, BatchError> {
        let n = picks.len();
        let seq = self.seq;
        let (mut ids, mut types, mut attn) = (
            Vec::with_capacity(n * seq),
            Vec::with_capacity(n * seq),
            Vec::with_capacity(n * seq),
        );
        let (mut starts, mut ends, mut which) = (Vec::new(), Vec::new(), Vec::new());
        for &(f, _) in picks {
            let ft = &self.features[f];
            let ex = &self.examples[ft.example];
            let (x, t, m) = super::pack_pair(
                self.cls,
                self.sep,
                self.pad,
                &ex.question_ids,
                Some(&ex.context_ids[ft.lo..ft.hi]),
                seq,
            );
            ids.extend(x);
            types.extend(t);
            attn.extend(m);
            starts.push(ft.start);
            ends.push(ft.end);
            which.push(f);
        }
        Ok(BertBatch {
            input_ids: stack(n, ids),
            token_type_ids: stack(n, types),
            attention_mask: stack(n, attn),
            target: Target::Squad {
                start: Tensor::from_slice(&starts),
                end: Tensor::from_slice(&ends),
                features: which,
            },
        })
    }
}

/// The file of a split: the first of `names` present in `dir`.
fn split_file(dir: &Path, names: &[&str]) -> Result<PathBuf, DataError> {
    names
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
        .ok_or_else(|| DataError::Format {
            path: dir.to_path_buf(),
            message: format!(
                "no {} here; --task squad reads --dataset_path DIR with train-v1.1.json and dev-v1.1.json (or train.json / dev.json)",
                names.join(" or ")
            ),
        })
}

impl SquadData {
    /// Reads and windows `dir`'s train and dev files.
    pub fn load(dir: &Path, tok: &WordPiece, w: Windows) -> Result<SquadData, DataError> {
        if !dir.is_dir() {
            return Err(DataError::Format {
                path: dir.to_path_buf(),
                message: "not a directory; --task squad reads --dataset_path DIR with train-v1.1.json and dev-v1.1.json".into(),
            });
        }
        let train = read_file(&split_file(dir, &["train-v1.1.json", "train.json"])?, tok)?;
        let dev = read_file(&split_file(dir, &["dev-v1.1.json", "dev.json"])?, tok)?;
        Ok(SquadData {
            train: SquadSamples::new(train, w, tok)?,
            val: SquadSamples::new(dev, w, tok)?,
            source: dir.display().to_string(),
        })
    }
}

/// The official SQuAD v1.1 `normalize_answer`: lower-case, remove ASCII punctuation
/// (`string.punctuation`), remove the articles a / an / the (as whole words), collapse
/// whitespace.
pub fn normalize_answer(s: &str) -> String {
    let lower = s.to_lowercase();
    let no_punc: String = lower
        .chars()
        .filter(|c| !c.is_ascii_punctuation())
        .collect();
    // `re.sub(r'\b(a|an|the)\b', ' ', text)`: a maximal run of word characters that is an
    // article becomes a space.
    let mut no_articles = String::with_capacity(no_punc.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if matches!(word.as_str(), "a" | "an" | "the") {
            out.push(' ');
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in no_punc.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut no_articles);
            no_articles.push(c);
        }
    }
    flush(&mut word, &mut no_articles);
    no_articles.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Official exact match: 1 when the normalized texts are equal.
pub fn exact_match(prediction: &str, truth: &str) -> f64 {
    f64::from(u8::from(
        normalize_answer(prediction) == normalize_answer(truth),
    ))
}

/// Official F1 over the normalized texts' whitespace tokens (bag-of-tokens overlap).
pub fn f1(prediction: &str, truth: &str) -> f64 {
    let p = normalize_answer(prediction);
    let t = normalize_answer(truth);
    let (p, t): (Vec<&str>, Vec<&str>) = (
        p.split_whitespace().collect(),
        t.split_whitespace().collect(),
    );
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for w in &t {
        *counts.entry(w).or_default() += 1;
    }
    let mut same = 0;
    for w in &p {
        if let Some(c) = counts.get_mut(w) {
            if *c > 0 {
                *c -= 1;
                same += 1;
            }
        }
    }
    if same == 0 {
        return 0.0;
    }
    let precision = same as f64 / p.len() as f64;
    let recall = same as f64 / t.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// The best score of `prediction` over the given `answers` (the official
/// `metric_max_over_ground_truths`).
pub fn max_over(metric: fn(&str, &str) -> f64, prediction: &str, answers: &[String]) -> f64 {
    answers
        .iter()
        .map(|a| metric(prediction, a))
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_and_scores_follow_the_official_script() {
        assert_eq!(normalize_answer("The  Eiffel-Tower!"), "eiffeltower");
        assert_eq!(
            normalize_answer("a cat and an owl, the end"),
            "cat and owl end"
        );
        assert_eq!(normalize_answer("theatre"), "theatre");
        assert_eq!(exact_match("the River", "river."), 1.0);
        // "red river bank" vs "river bank": precision 2/3, recall 1.
        assert!((f1("the red river bank", "river bank") - 0.8).abs() < 1e-12);
        assert_eq!(f1("cat", "dog"), 0.0);
        assert_eq!(
            max_over(exact_match, "Paris", &["London".into(), "paris".into()]),
            1.0
        );
    }

    #[test]
    fn char_slices_are_in_characters() {
        assert_eq!(char_slice("héllo wörld", 6, 11), "wörld");
        assert_eq!(char_slice("abc", 1, 1), "");
    }

    #[test]
    fn windows_cover_the_context_and_hold_the_answer_span() {
        let dir = tempfile::tempdir().unwrap();
        let context = "Ada walked to the river with a red cat. ".repeat(6);
        let at = context.find("red cat").unwrap() + 40 * 3;
        let json = serde_json::json!({"version": "1.1", "data": [{"title": "t", "paragraphs": [
            {"context": context, "qas": [{"id": "q1", "question": "What did Ada walk with?",
             "answers": [{"text": "red cat", "answer_start": at}]}]}]}]});
        let path = dir.path().join("train.json");
        std::fs::write(&path, json.to_string()).unwrap();
        let tok = WordPiece::load(None).unwrap();
        let ex = read_file(&path, &tok).unwrap();
        let w = Windows {
            seq: 32,
            max_query: 64,
            stride: 8,
        };
        let s = SquadSamples::new(ex, w, &tok).unwrap();
        assert!(s.features() > 3, "{}", s.features());
        let with_answer: Vec<&Feature> = s.features.iter().filter(|f| f.start > 0).collect();
        assert!(!with_answer.is_empty());
        let b = s.batch(&[(0, 0)]).unwrap();
        assert_eq!(b.input_ids.size(), [1, 32]);
        // The target tokens are the answer's; best_span recovers its text.
        for f in 0..s.features() {
            let ft = s.features[f];
            if ft.start == 0 {
                continue;
            }
            let mut start = vec![0f32; 32];
            let mut end = vec![0f32; 32];
            start[ft.start as usize] = 5.0;
            end[ft.end as usize] = 5.0;
            let (_, text) = s.best_span(f, &start, &end, 30).unwrap();
            assert_eq!(text, "red cat");
        }
    }
}
