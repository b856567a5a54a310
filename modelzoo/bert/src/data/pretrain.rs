//! Pretraining data: a text corpus (the built-in one, `.txt` — documents separated by blank
//! lines, sentences one per line or run together — or `.jsonl` with a `"text"` document per
//! line, or pre-tokenized `.jsonl` shards with a `"sentences": [[ids...], ...]` document per
//! line) cut into sentence-pair instances as Google's `create_pretraining_data.py` does (pairs
//! filling `max_seq_length - 3` tokens, 10% shorter, half of them with a random segment B from
//! another document for next-sentence prediction), split by document 95 / 5 into train and
//! validation. Masking is dynamic: each time an instance is batched, 15% of its tokens
//! (`--masked_lm_prob`, at most `--max_predictions_per_seq`, at least one) are chosen, and each
//! becomes `[MASK]` 80%, a random token 10%, itself 10% of the time — drawn from (seed, stream
//! position), so the same step of a run always masks the same tokens.

use std::path::{Path, PathBuf};

use modelzoo_engine::BatchError;
use tch::Tensor;

use super::{pack_pair, stack, BertBatch, Rng, Samples, Target};
use crate::data::DataError;
use crate::tokenizer::WordPiece;

/// Chance of a shorter target length (Google's `short_seq_prob`).
const SHORT_SEQ_PROB: f64 = 0.1;

/// Paragraphs of the built-in corpus per pretraining document.
const BUILTIN_PARAGRAPHS_PER_DOC: usize = 4;

/// One sentence pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    pub a: Vec<u32>,
    pub b: Vec<u32>,
    /// Segment B is a random one (next-sentence label 1).
    pub random_next: bool,
}

/// How instances become batches.
#[derive(Debug, Clone, Copy)]
pub struct Masking {
    /// Tokens per sequence.
    pub seq: usize,
    pub max_predictions: usize,
    pub prob: f64,
    /// Random replacements are drawn from ids `0..vocab` (the tokenizer's).
    pub vocab: usize,
    pub seed: u64,
}

/// Pretraining instances with their masking.
pub struct PretrainSamples {
    pub instances: Vec<Instance>,
    masking: Masking,
    cls: u32,
    sep: u32,
    pad: u32,
    mask: u32,
}

/// A corpus' documents (each a list of sentences, each a list of token ids), and its name.
pub struct Documents {
    pub name: String,
    pub docs: Vec<Vec<Vec<u32>>>,
}

/// The train and validation instances of a corpus.
pub struct PretrainData {
    pub train: PretrainSamples,
    pub val: PretrainSamples,
    pub corpus: String,
}

/// Splits a paragraph into sentences: at line breaks, and after `.`, `!` or `?` (and any
/// closing quotes or brackets) followed by a space and an upper-case letter, a digit or an
/// opening quote.
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        let mut start = 0;
        let mut i = 0;
        while i < chars.len() {
            if matches!(chars[i].1, '.' | '!' | '?') {
                let mut j = i + 1;
                while j < chars.len() && matches!(chars[j].1, '"' | '\'' | '”' | '’' | ')') {
                    j += 1;
                }
                if j < chars.len() && chars[j].1.is_whitespace() {
                    let mut k = j;
                    while k < chars.len() && chars[k].1.is_whitespace() {
                        k += 1;
                    }
                    if k < chars.len()
                        && (chars[k].1.is_uppercase()
                            || chars[k].1.is_ascii_digit()
                            || matches!(chars[k].1, '"' | '“' | '\''))
                    {
                        out.push(line[start..chars[j].0].trim());
                        start = chars[k].0;
                        i = k;
                        continue;
                    }
                }
            }
            i += 1;
        }
        out.push(line[start..].trim());
    }
    out.retain(|s| !s.is_empty());
    out
}

impl Documents {
    /// `input` (a `.txt` / `.jsonl` file, or a directory of them), or the built-in corpus,
    /// tokenized.
    pub fn open(input: Option<&Path>, tok: &WordPiece) -> Result<Documents, DataError> {
        let mut texts: Vec<String> = Vec::new();
        let mut docs: Vec<Vec<Vec<u32>>> = Vec::new();
        let name = match input {
            None => {
                // Its paragraphs are short (about 65 tokens): four make a document, so
                // sentence pairs fill 128-token sequences as real documents do.
                let p = paragraphs(modelzoo_text::BUILTIN_CORPUS);
                texts.extend(p.chunks(BUILTIN_PARAGRAPHS_PER_DOC).map(|c| c.join("\n")));
                "the built-in corpus".to_string()
            }
            Some(input) => {
                for file in text_files(input)? {
                    let raw = super::read_text(&file)?;
                    if file.extension().is_some_and(|e| e == "jsonl") {
                        for doc in jsonl_docs(&file, &raw, tok.vocab_size())? {
                            match doc {
                                JsonDoc::Text(t) => texts.push(t),
                                JsonDoc::Ids(d) => docs.push(d),
                            }
                        }
                    } else {
                        texts.extend(paragraphs(&raw));
                    }
                }
                input.display().to_string()
            }
        };
        for text in &texts {
            let mut doc = Vec::new();
            for s in sentences(text) {
                let ids = tok.ids(s)?;
                if !ids.is_empty() {
                    doc.push(ids);
                }
            }
            if !doc.is_empty() {
                docs.push(doc);
            }
        }
        if docs.is_empty() {
            return Err(DataError::Format {
                path: PathBuf::from(&name),
                message: "no text: the corpus holds no sentence".into(),
            });
        }
        Ok(Documents { name, docs })
    }
}

/// Blank-line separated blocks, trimmed, empty ones dropped.
fn paragraphs(text: &str) -> Vec<String> {
    text.replace("\r\n", "\n")
        .split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// One line of a `.jsonl` corpus: a document to tokenize, or one already tokenized.
enum JsonDoc {
    Text(String),
    Ids(Vec<Vec<u32>>),
}

/// Every line of a `.jsonl` file: `{"text": "..."}` (a document), or a pre-tokenized document
/// `{"sentences": [[id, ...], ...]}` — its sentences as ids of the `--tokenizer`'s vocabulary
/// (below `vocab`), used as they are (shards written once by a tokenizer run).
fn jsonl_docs(path: &Path, raw: &str, vocab: usize) -> Result<Vec<JsonDoc>, DataError> {
    let mut out = Vec::new();
    for (i, line) in raw.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| DataError::Format {
            path: path.to_path_buf(),
            message: format!("line {}: {message}", i + 1),
        };
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        if let Some(sentences) = v.get("sentences") {
            let not_ids = || {
                bad(
                    "\"sentences\" must be a list of lists of token ids (non-negative integers)"
                        .into(),
                )
            };
            let mut doc = Vec::new();
            for sentence in sentences.as_array().ok_or_else(not_ids)? {
                let mut ids = Vec::new();
                for id in sentence.as_array().ok_or_else(not_ids)? {
                    let id = id.as_u64().ok_or_else(not_ids)?;
                    if id >= vocab as u64 {
                        return Err(bad(format!(
                            "token id {id} is outside the tokenizer's {vocab} ids: the shard was written with another vocabulary (give its --tokenizer)"
                        )));
                    }
                    ids.push(id as u32);
                }
                if !ids.is_empty() {
                    doc.push(ids);
                }
            }
            if !doc.is_empty() {
                out.push(JsonDoc::Ids(doc));
            }
            continue;
        }
        let text = v.get("text").and_then(|t| t.as_str()).ok_or_else(|| {
            bad("no string field \"text\" (or \"sentences\" of token ids)".into())
        })?;
        out.push(JsonDoc::Text(text.to_string()));
    }
    Ok(out)
}

/// `.txt` / `.jsonl` files: `input` itself, or a directory's, sorted.
fn text_files(input: &Path) -> Result<Vec<PathBuf>, DataError> {
    if input.is_file() {
        return Ok(vec![input.to_path_buf()]);
    }
    if !input.is_dir() {
        return Err(DataError::Format {
            path: input.to_path_buf(),
            message:
                "no such file or directory; give a .txt / .jsonl corpus or a directory of them"
                    .into(),
        });
    }
    let rd = std::fs::read_dir(input).map_err(|source| DataError::Io {
        path: input.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "txt" || e == "jsonl"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(DataError::Format {
            path: input.to_path_buf(),
            message: "no .txt or .jsonl files here (pretraining reads text: documents separated by blank lines, or JSON lines with a \"text\" field)".into(),
        });
    }
    Ok(files)
}

/// Google's `truncate_seq_pair`: drop tokens from the longer segment, at its front or back
/// with equal chance, until both fit `max` tokens.
fn truncate_random(a: &mut Vec<u32>, b: &mut Vec<u32>, max: usize, rng: &mut Rng) {
    while a.len() + b.len() > max {
        let t = if a.len() > b.len() { &mut *a } else { &mut *b };
        if rng.unit() < 0.5 {
            t.remove(0);
        } else {
            t.pop();
        }
    }
}

/// Google's `create_instances_from_document` for every document of `docs` (random segments
/// B drawn from `docs` too), with `rng`.
pub fn instances(docs: &[Vec<Vec<u32>>], seq: usize, rng: &mut Rng) -> Vec<Instance> {
    let max_tokens = seq.saturating_sub(3);
    let mut out = Vec::new();
    if max_tokens < 2 {
        return out;
    }
    for (d, doc) in docs.iter().enumerate() {
        let target = if rng.unit() < SHORT_SEQ_PROB {
            rng.between(2, max_tokens)
        } else {
            max_tokens
        };
        let mut chunk: Vec<&Vec<u32>> = Vec::new();
        let mut length = 0;
        let mut i = 0;
        while i < doc.len() {
            chunk.push(&doc[i]);
            length += doc[i].len();
            if i == doc.len() - 1 || length >= target {
                let a_end = if chunk.len() >= 2 {
                    rng.between(1, chunk.len() - 1)
                } else {
                    1
                };
                let mut a: Vec<u32> = chunk[..a_end]
                    .iter()
                    .flat_map(|s| s.iter().copied())
                    .collect();
                let mut b: Vec<u32> = Vec::new();
                let random_next = chunk.len() == 1 || rng.unit() < 0.5;
                if random_next {
                    let target_b = target.saturating_sub(a.len()).max(1);
                    let mut other = d;
                    for _ in 0..10 {
                        other = rng.below(docs.len());
                        if other != d {
                            break;
                        }
                    }
                    let rdoc = &docs[other];
                    let start = rng.below(rdoc.len());
                    for s in &rdoc[start..] {
                        b.extend_from_slice(s);
                        if b.len() >= target_b {
                            break;
                        }
                    }
                    // The segments not used go back for the next instance.
                    i -= chunk.len() - a_end;
                } else {
                    b = chunk[a_end..]
                        .iter()
                        .flat_map(|s| s.iter().copied())
                        .collect();
                }
                truncate_random(&mut a, &mut b, max_tokens, rng);
                if !a.is_empty() && !b.is_empty() {
                    out.push(Instance { a, b, random_next });
                }
                chunk.clear();
                length = 0;
            }
            i += 1;
        }
    }
    out
}

impl PretrainSamples {
    /// `instances` batched with `masking` and `tok`'s special ids.
    pub fn new(instances: Vec<Instance>, masking: Masking, tok: &WordPiece) -> PretrainSamples {
        PretrainSamples {
            instances,
            masking,
            cls: tok.cls,
            sep: tok.sep,
            pad: tok.pad,
            mask: tok.mask,
        }
    }

    /// The masked sequence of instance `i` at stream position `t`: (ids, token types,
    /// attention mask, masked positions, their original ids).
    #[allow(clippy::type_complexity)]
    pub fn masked(&self, i: usize, t: u64) -> (Vec<i64>, Vec<i64>, Vec<i64>, Vec<usize>, Vec<i64>) {
        let m = &self.masking;
        let inst = &self.instances[i];
        let (mut ids, types, attn) =
            pack_pair(self.cls, self.sep, self.pad, &inst.a, Some(&inst.b), m.seq);
        let len = inst.a.len() + inst.b.len() + 3;
        let mut rng = Rng::new(m.seed ^ 0x6D61_736B, t);
        let mut candidates: Vec<usize> = (1..len)
            .filter(|&p| ids[p] != self.sep as i64 && ids[p] != self.cls as i64)
            .collect();
        rng.shuffle(&mut candidates);
        let n = ((len as f64 * m.prob).round() as usize)
            .max(1)
            .min(m.max_predictions)
            .min(candidates.len());
        let mut positions: Vec<usize> = candidates[..n].to_vec();
        positions.sort_unstable();
        let mut labels = Vec::with_capacity(n);
        for &p in &positions {
            labels.push(ids[p]);
            let r = rng.unit();
            if r < 0.8 {
                ids[p] = self.mask as i64;
            } else if r >= 0.9 {
                ids[p] = rng.below(m.vocab) as i64;
            }
        }
        (ids, types, attn, positions, labels)
    }
}

impl Samples for PretrainSamples {
    fn len(&self) -> usize {
        self.instances.len()
    }

    fn max_token_id(&self) -> u32 {
        let seqs = self
            .instances
            .iter()
            .flat_map(|i| [i.a.as_slice(), i.b.as_slice()]);
        let replacements = u32::try_from(self.masking.vocab.saturating_sub(1)).unwrap_or(u32::MAX);
        super::max_id(
            &[self.cls, self.sep, self.pad, self.mask, replacements],
            seqs,
        )
    }

    fn batch(&self, picks: &[(usize, u64)]) -> Result<BertBatch, BatchError> {
        let seq = self.masking.seq;
        let rows = picks.len();
        let (mut ids, mut types, mut attn) = (
            Vec::with_capacity(rows * seq),
            Vec::with_capacity(rows * seq),
            Vec::with_capacity(rows * seq),
        );
        let (mut positions, mut labels, mut next) = (Vec::new(), Vec::new(), Vec::new());
        for (row, &(i, t)) in picks.iter().enumerate() {
            let (x, tt, am, pos, lab) = self.masked(i, t);
            ids.extend(x);
            types.extend(tt);
            attn.extend(am);
            positions.extend(pos.iter().map(|&p| (row * seq + p) as i64));
            labels.extend(lab);
            next.push(i64::from(self.instances[i].random_next));
        }
        Ok(BertBatch {
            input_ids: stack(rows, ids),
            token_type_ids: stack(rows, types),
            attention_mask: stack(rows, attn),
            target: Target::Pretrain {
                mlm_positions: Tensor::from_slice(&positions),
                mlm_labels: Tensor::from_slice(&labels),
                next_sentence: Tensor::from_slice(&next),
            },
        })
    }
}

impl PretrainData {
    /// The instances of `input` (or the built-in corpus) for sequences of `masking.seq`
    /// tokens: documents split 95 / 5 (train / validation) in corpus order, instances drawn
    /// from (seed) within each split.
    pub fn load(
        input: Option<&Path>,
        tok: &WordPiece,
        masking: Masking,
    ) -> Result<PretrainData, DataError> {
        let docs = Documents::open(input, tok)?;
        let n = docs.docs.len();
        let cut = modelzoo_text::corpus::split_indices("95,5,0", n)
            .map_err(|e| DataError::Other(e.to_string()))?;
        let (train_docs, val_docs) = (&docs.docs[..cut[1]], &docs.docs[cut[1]..cut[2]]);
        let mut rng = Rng::new(masking.seed, 0x696E_7374);
        let train = instances(train_docs, masking.seq, &mut rng);
        let val = instances(val_docs, masking.seq, &mut Rng::new(masking.seed, 0x76616C));
        if train.is_empty() {
            return Err(DataError::Format {
                path: PathBuf::from(&docs.name),
                message: format!(
                    "no training sentence pair: {n} document(s) of {} sentence(s) in all; pretraining needs documents of several sentences (or several documents)",
                    docs.docs.iter().map(Vec::len).sum::<usize>()
                ),
            });
        }
        // Validation masks the same tokens every time: a fixed seed.
        let val_masking = Masking {
            seed: 0x5EED,
            ..masking
        };
        Ok(PretrainData {
            train: PretrainSamples::new(train, masking, tok),
            val: PretrainSamples::new(val, val_masking, tok),
            corpus: docs.name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pre-tokenized shard line reads as the document its text tokenizes to; ids outside
    /// the vocabulary and malformed lines are named with the file and line.
    #[test]
    fn pretokenized_shards_read_like_the_text_they_came_from() {
        let tok = WordPiece::load(None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let text = "Ada walked to the river. Ben sat near the hill.";
        std::fs::write(
            dir.path().join("a.jsonl"),
            format!("{}\n", serde_json::json!({ "text": text })),
        )
        .unwrap();
        let ids: Vec<Vec<u32>> = sentences(text)
            .iter()
            .map(|s| tok.ids(s).unwrap())
            .collect();
        assert_eq!(ids.len(), 2);
        std::fs::write(
            dir.path().join("b.jsonl"),
            format!("{}\n", serde_json::json!({ "sentences": ids })),
        )
        .unwrap();
        let docs = Documents::open(Some(dir.path()), &tok).unwrap();
        assert_eq!(docs.docs.len(), 2);
        assert_eq!(docs.docs[0], ids);
        assert_eq!(docs.docs[1], ids);

        std::fs::write(
            dir.path().join("b.jsonl"),
            "{\"sentences\": [[5, 6]]}\n{\"sentences\": [[5, 336]]}\n",
        )
        .unwrap();
        let e = Documents::open(Some(dir.path()), &tok)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("b.jsonl") && e.contains("line 2") && e.contains("336"),
            "{e}"
        );
        std::fs::write(dir.path().join("b.jsonl"), "{\"sentences\": [\"ada\"]}\n").unwrap();
        let e = Documents::open(Some(dir.path()), &tok)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("line 1") && e.contains("token ids"), "{e}");
    }

    #[test]
    fn sentences_split_at_ends_not_inside_quotes() {
        let p = "Leo asked Eva, \"Where is the bear?\" and Eva said, \"It is here.\" Ten plus one is eleven.\nA new line.";
        assert_eq!(
            sentences(p),
            [
                "Leo asked Eva, \"Where is the bear?\" and Eva said, \"It is here.\"",
                "Ten plus one is eleven.",
                "A new line."
            ]
        );
    }

    fn masking(seq: usize) -> Masking {
        Masking {
            seq,
            max_predictions: 20,
            prob: 0.15,
            vocab: 336,
            seed: 42,
        }
    }

    #[test]
    fn instances_fill_the_sequence_and_half_are_random_next() {
        let tok = WordPiece::load(None).unwrap();
        let docs = Documents::open(None, &tok).unwrap();
        assert!(docs.docs.len() > 200, "{}", docs.docs.len());
        let inst = instances(&docs.docs, 64, &mut Rng::new(1, 2));
        assert!(inst.len() > 500);
        let random = inst.iter().filter(|i| i.random_next).count() as f64 / inst.len() as f64;
        assert!((0.4..0.7).contains(&random), "{random}");
        assert!(inst.iter().all(|i| i.a.len() + i.b.len() <= 61));
        let full = inst.iter().filter(|i| i.a.len() + i.b.len() >= 55).count();
        assert!(full * 2 > inst.len(), "most pairs fill the sequence");
    }

    #[test]
    fn masking_is_15_percent_80_10_10_and_a_function_of_the_position() {
        let tok = WordPiece::load(None).unwrap();
        let inst = Instance {
            a: (10..70).collect(),
            b: (100..160).collect(),
            random_next: false,
        };
        let s = PretrainSamples::new(vec![inst], masking(128), &tok);
        let (mut masked, mut kept, mut random, mut total) = (0, 0, 0, 0);
        for t in 0..2000 {
            let (ids, types, attn, pos, labels) = s.masked(0, t);
            assert_eq!(ids.len(), 128);
            assert_eq!(types[62], 1);
            assert_eq!(attn.iter().sum::<i64>(), 123);
            assert_eq!(pos.len(), 18, "round(123 * 0.15)");
            for (&p, &l) in pos.iter().zip(&labels) {
                assert!(p != 0 && p != 61 && p != 122, "never [CLS] / [SEP]");
                total += 1;
                if ids[p] == tok.mask as i64 {
                    masked += 1;
                } else if ids[p] == l {
                    kept += 1;
                } else {
                    random += 1;
                }
            }
        }
        // 36 000 choices: the binomial standard deviation of the 80% share is 0.002 (0.0016
        // for the 10% shares); 0.02 is about 10 of them, so the test is not flaky, and a
        // wrong split (e.g. 80/20/0 or 90/5/5) fails it.
        let f = |n: i32| n as f64 / total as f64;
        assert!((f(masked) - 0.8).abs() < 0.02, "{}", f(masked));
        assert!((f(kept) - 0.1).abs() < 0.02, "{}", f(kept));
        assert!((f(random) - 0.1).abs() < 0.02, "{}", f(random));
        assert_eq!(s.masked(0, 5), s.masked(0, 5));
        assert_ne!(s.masked(0, 5).3, s.masked(0, 6).3);
    }
}
