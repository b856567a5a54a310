//! Sequence-classification data: `--dataset_path DIR` holding `train.tsv` / `train.jsonl` and
//! `dev.tsv` / `dev.jsonl` (GLUE's file names; `validation.*` also read). A TSV has a header
//! naming its columns: the text in `sentence`, `text`, `text_a`, `sentence1`, `question1`,
//! `question` or `#1 String`, an optional second segment in `text_b`, `sentence2`,
//! `question2`, `#2 String` (or `sentence` beside `question`, as QNLI), the class in `label`
//! (or `Quality`, as MRPC). A JSON line has the same keys. Classes are integers
//! `0..--num_labels`, or names (`positive`), numbered in sorted order of the training file's.
//! Each example becomes `[CLS] a [SEP] (b [SEP])`, the longer segment cut first to fit.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use modelzoo_engine::BatchError;
use tch::Tensor;

use super::{pack_pair, stack, truncate_pair, BertBatch, DataError, Samples, Target};
use crate::tokenizer::WordPiece;

/// Column names of the first segment, in order of preference.
const TEXT_A: &[&str] = &[
    "text_a",
    "sentence1",
    "question1",
    "#1 String",
    "question",
    "sentence",
    "text",
];
/// Column names of the second segment.
const TEXT_B: &[&str] = &["text_b", "sentence2", "question2", "#2 String"];
/// Column names of the class.
const LABEL: &[&str] = &["label", "Quality"];

/// One example as read.
#[derive(Debug, Clone, PartialEq)]
struct Raw {
    a: String,
    b: Option<String>,
    label: String,
    /// `file:line`, for messages.
    at: String,
}

/// One tokenized example: segment A, segment B (if any), class id.
type Row = (Vec<u32>, Option<Vec<u32>>, i64);

/// Tokenized examples of one split.
pub struct ClassifySamples {
    rows: Vec<Row>,
    seq: usize,
    cls: u32,
    sep: u32,
    pad: u32,
}

/// The train and dev splits.
pub struct ClassifyData {
    pub train: ClassifySamples,
    pub val: ClassifySamples,
    /// The class names when the files name classes (index = class id); empty for integers.
    pub label_names: Vec<String>,
    /// The dataset directory, for messages.
    pub source: String,
}

/// The file of `split` in `dir` (`.tsv` or `.jsonl`).
fn split_file(dir: &Path, names: &[&str]) -> Result<PathBuf, DataError> {
    for name in names {
        for ext in ["tsv", "jsonl"] {
            let p = dir.join(format!("{name}.{ext}"));
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err(DataError::Format {
        path: dir.to_path_buf(),
        message: format!(
            "no {}.tsv or {}.jsonl here; --task classification reads --dataset_path DIR with train.tsv|jsonl and dev.tsv|jsonl",
            names[0], names[0]
        ),
    })
}

fn read_tsv(path: &Path, text: &str) -> Result<Vec<Raw>, DataError> {
    let bad = |line: usize, message: String| DataError::Format {
        path: path.to_path_buf(),
        message: format!("line {line}: {message}"),
    };
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(DataError::Format {
            path: path.to_path_buf(),
            message: "empty file".into(),
        });
    };
    let cols: Vec<&str> = header.split('\t').map(str::trim).collect();
    let find = |names: &[&str]| names.iter().find_map(|n| cols.iter().position(|c| c == n));
    let a = find(TEXT_A).ok_or_else(|| {
        bad(
            1,
            format!(
                "the header names no text column (one of {}); columns: {}",
                TEXT_A.join(", "),
                cols.join(", ")
            ),
        )
    })?;
    let b = find(TEXT_B).or_else(|| {
        (cols[a] == "question")
            .then(|| cols.iter().position(|c| *c == "sentence"))
            .flatten()
    });
    let label = find(LABEL).ok_or_else(|| {
        bad(
            1,
            format!(
                "the header names no label column (label or Quality); columns: {}",
                cols.join(", ")
            ),
        )
    })?;
    let mut out = Vec::new();
    for (i, line) in lines {
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != cols.len() {
            return Err(bad(
                i + 1,
                format!(
                    "{} tab-separated fields, the header has {}",
                    fields.len(),
                    cols.len()
                ),
            ));
        }
        out.push(Raw {
            a: fields[a].to_string(),
            b: b.map(|b| fields[b].to_string()),
            label: fields[label].trim().to_string(),
            at: format!("{}:{}", path.display(), i + 1),
        });
    }
    Ok(out)
}

fn read_jsonl(path: &Path, text: &str) -> Result<Vec<Raw>, DataError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| DataError::Format {
            path: path.to_path_buf(),
            message: format!("line {}: {message}", i + 1),
        };
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let field = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| v.get(*n).and_then(|x| x.as_str()).map(str::to_string))
        };
        let a = field(TEXT_A)
            .ok_or_else(|| bad(format!("no text field (one of {})", TEXT_A.join(", "))))?;
        let label = LABEL
            .iter()
            .find_map(|n| v.get(*n))
            .and_then(|l| match l {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Number(n) => Some(n.to_string()),
                serde_json::Value::Bool(b) => Some(b.to_string()),
                _ => None,
            })
            .ok_or_else(|| bad("no \"label\" (an integer or a class name)".into()))?;
        out.push(Raw {
            a,
            b: field(TEXT_B),
            label,
            at: format!("{}:{}", path.display(), i + 1),
        });
    }
    Ok(out)
}

fn read(path: &Path) -> Result<Vec<Raw>, DataError> {
    let text = super::read_text(path)?;
    let rows = if path.extension().is_some_and(|e| e == "jsonl") {
        read_jsonl(path, &text)?
    } else {
        read_tsv(path, &text)?
    };
    if rows.is_empty() {
        return Err(DataError::Format {
            path: path.to_path_buf(),
            message: "no examples".into(),
        });
    }
    Ok(rows)
}

impl ClassifySamples {
    fn new(rows: Vec<Row>, seq: usize, tok: &WordPiece) -> Self {
        ClassifySamples {
            rows,
            seq,
            cls: tok.cls,
            sep: tok.sep,
            pad: tok.pad,
        }
    }
}

impl Samples for ClassifySamples {
    fn len(&self) -> usize {
        self.rows.len()
    }

    fn max_token_id(&self) -> u32 {
        let seqs = self
            .rows
            .iter()
            .flat_map(|(a, b, _)| std::iter::once(a.as_slice()).chain(b.as_deref()));
        super::max_id(&[self.cls, self.sep, self.pad], seqs)
    }

    fn batch(&self, picks: &[(usize, u64)]) -> Result<BertBatch, BatchError> {
        let n = picks.len();
        let (mut ids, mut types, mut attn, mut labels) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for &(i, _) in picks {
            let (a, b, label) = &self.rows[i];
            let (x, t, m) = pack_pair(self.cls, self.sep, self.pad, a, b.as_deref(), self.seq);
            ids.extend(x);
            types.extend(t);
            attn.extend(m);
            labels.push(*label);
        }
        Ok(BertBatch {
            input_ids: stack(n, ids),
            token_type_ids: stack(n, types),
            attention_mask: stack(n, attn),
            target: Target::Classification {
                labels: Tensor::from_slice(&labels),
            },
        })
    }
}

impl ClassifyData {
    /// Reads, labels and tokenizes the train and dev files of `dir` for sequences of `seq`
    /// tokens and `num_labels` classes.
    pub fn load(
        dir: &Path,
        tok: &WordPiece,
        seq: usize,
        num_labels: i64,
    ) -> Result<ClassifyData, DataError> {
        if !dir.is_dir() {
            return Err(DataError::Format {
                path: dir.to_path_buf(),
                message: "not a directory; --task classification reads --dataset_path DIR with train.tsv|jsonl and dev.tsv|jsonl".into(),
            });
        }
        let train_path = split_file(dir, &["train"])?;
        let dev_path = split_file(dir, &["dev", "validation"])?;
        let (train, dev) = (read(&train_path)?, read(&dev_path)?);
        let numeric = train
            .iter()
            .chain(&dev)
            .all(|r| r.label.parse::<i64>().is_ok());
        let names: Vec<String> = if numeric {
            Vec::new()
        } else {
            let set: BTreeSet<&str> = train.iter().map(|r| r.label.as_str()).collect();
            set.into_iter().map(str::to_string).collect()
        };
        if names.len() as i64 > num_labels {
            return Err(DataError::Format {
                path: train_path,
                message: format!(
                    "{} classes ({}) but --num_labels {num_labels}; raise --num_labels",
                    names.len(),
                    names.join(", ")
                ),
            });
        }
        let label_of = |r: &Raw| -> Result<i64, DataError> {
            let id = if numeric {
                r.label.parse::<i64>().unwrap_or(-1)
            } else {
                names
                    .iter()
                    .position(|n| *n == r.label)
                    .map_or(-1, |p| p as i64)
            };
            if !(0..num_labels).contains(&id) {
                return Err(DataError::Other(format!(
                    "{}: label {:?} is not a class of this run ({}); raise --num_labels or fix the label",
                    r.at,
                    r.label,
                    if numeric {
                        format!("integers 0..{}", num_labels - 1)
                    } else {
                        format!("the training file's classes: {}", names.join(", "))
                    }
                )));
            }
            Ok(id)
        };
        let tokenize = |rows: &[Raw]| -> Result<Vec<Row>, DataError> {
            rows.iter()
                .map(|r| {
                    let label = label_of(r)?;
                    let mut a = tok.ids(&r.a)?;
                    let mut b = match &r.b {
                        Some(b) => Some(tok.ids(b)?),
                        None => None,
                    };
                    match &mut b {
                        Some(b) => truncate_pair(&mut a, b, seq.saturating_sub(3)),
                        None => a.truncate(seq.saturating_sub(2)),
                    }
                    Ok((a, b, label))
                })
                .collect()
        };
        Ok(ClassifyData {
            train: ClassifySamples::new(tokenize(&train)?, seq, tok),
            val: ClassifySamples::new(tokenize(&dev)?, seq, tok),
            label_names: names,
            source: dir.display().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glue_tsv_and_jsonl_with_named_labels() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("train.tsv"),
            "sentence\tlabel\nthe cat sat\t1\na dog ran\t0\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("dev.jsonl"),
            "{\"sentence1\": \"a cat\", \"sentence2\": \"the dog\", \"label\": 1}\n",
        )
        .unwrap();
        let tok = WordPiece::load(None).unwrap();
        let d = ClassifyData::load(dir.path(), &tok, 16, 2).unwrap();
        assert_eq!((d.train.len(), d.val.len()), (2, 1));
        let b = d.val.batch(&[(0, 0)]).unwrap();
        let types = Vec::<i64>::try_from(b.token_type_ids.flatten(0, -1)).unwrap();
        assert_eq!(types.iter().sum::<i64>(), 3, "`the dog [SEP]` is segment 1");
        assert!(d.label_names.is_empty());

        std::fs::write(
            dir.path().join("train.tsv"),
            "sentence\tlabel\nthe cat sat\tpositive\na dog ran\tnegative\nan owl\tneutral\n",
        )
        .unwrap();
        let e = ClassifyData::load(dir.path(), &tok, 16, 2)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("3 classes") && e.contains("--num_labels"), "{e}");
        let e = ClassifyData::load(dir.path(), &tok, 16, 3)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("dev.jsonl:1") && e.contains("\"1\""), "{e}");
    }

    #[test]
    fn bad_files_are_named_with_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let tok = WordPiece::load(None).unwrap();
        let e = ClassifyData::load(dir.path(), &tok, 16, 2)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("train.tsv"), "{e}");
        std::fs::write(dir.path().join("train.tsv"), "words\tlabel\nx\t0\n").unwrap();
        std::fs::write(dir.path().join("dev.tsv"), "sentence\tlabel\nx\t0\n").unwrap();
        let e = ClassifyData::load(dir.path(), &tok, 16, 2)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no text column") && e.contains("words"), "{e}");
        std::fs::write(dir.path().join("train.tsv"), "sentence\tlabel\nx\t0\ty\n").unwrap();
        let e = ClassifyData::load(dir.path(), &tok, 16, 2)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("line 2") && e.contains("3 tab-separated"), "{e}");
        std::fs::write(dir.path().join("train.tsv"), "sentence\tlabel\nx\t7\n").unwrap();
        let e = ClassifyData::load(dir.path(), &tok, 16, 2)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("train.tsv:2") && e.contains("\"7\""), "{e}");
    }
}
