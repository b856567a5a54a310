//! Training data for decoder language models: a token stream made of documents
//! (Megatron/FleetX `*_ids.npy` + `*_idx.npz`, memory-mapped; or `.txt` / `.jsonl` text
//! tokenized at load time; or the built-in corpus), split by document into train / valid /
//! test with FleetX's ratios, and cut into samples of `max_seq_len + 1` tokens.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tch::Tensor;

use crate::npy;
use crate::tokenizer::{Tokenizer, TokenizerError};

/// The built-in corpus: generated English-like text (see `data/gen_corpus.py`), so
/// `run_gpt --step 50` trains with no download.
pub const BUILTIN_CORPUS: &str = include_str!("../data/corpus.txt");

#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Format { path: PathBuf, message: String },
    #[error("{}: no data found: expected `<prefix>_ids.npy` + `<prefix>_idx.npz`, or `.txt` / `.jsonl` files", path.display())]
    Empty { path: PathBuf },
    #[error("{}: several Megatron prefixes ({}); point Data.dataset.input_dir at one of them (`<dir>/<prefix>`)", path.display(), prefixes.join(", "))]
    ManyPrefixes {
        path: PathBuf,
        prefixes: Vec<String>,
    },
    #[error("bad Data.dataset.split `{split}`: {reason} (expected e.g. '949,50,1')")]
    Split { split: String, reason: String },
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    #[error("{source_name}: token id {id} at position {position} is outside the model vocabulary (vocab_size {vocab}); raise Model.vocab_size or use the matching tokenizer")]
    TokenOutOfRange {
        source_name: String,
        id: i64,
        position: usize,
        vocab: i64,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> DataError + '_ {
    move |source| DataError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where the token ids live.
enum Storage {
    Mapped {
        map: memmap2::Mmap,
        header: npy::Header,
    },
    Owned(Vec<u32>),
}

/// A token stream and the document boundaries in it.
pub struct Corpus {
    name: String,
    storage: Storage,
    /// `doc_offsets[d]` = first token of document d; the last entry = total tokens.
    doc_offsets: Vec<usize>,
}

impl std::fmt::Debug for Corpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Corpus")
            .field("name", &self.name)
            .field("tokens", &self.num_tokens())
            .field("documents", &self.num_documents())
            .finish()
    }
}

impl Corpus {
    /// Opens `input` (a directory, a Megatron prefix, a `*_ids.npy`, or a text file); `None`
    /// = the built-in corpus. Text is tokenized with `tokenizer`; Megatron ids are taken as
    /// they are.
    pub fn open(input: Option<&Path>, tokenizer: &Tokenizer) -> Result<Corpus, DataError> {
        let Some(input) = input else {
            return Corpus::from_documents(
                "built-in corpus",
                paragraphs(BUILTIN_CORPUS),
                tokenizer,
            );
        };
        if let Some(prefix) = megatron_prefix(input)? {
            return Corpus::open_megatron(&prefix);
        }
        let files = text_files(input)?;
        let mut docs = Vec::new();
        for file in &files {
            read_documents(file, &mut docs)?;
        }
        Corpus::from_documents(&input.display().to_string(), docs, tokenizer)
    }

    /// Tokenizes documents and joins them, each followed by end-of-text when the tokenizer
    /// has one.
    pub fn from_documents<S: AsRef<str>>(
        name: &str,
        docs: Vec<S>,
        tokenizer: &Tokenizer,
    ) -> Result<Corpus, DataError> {
        let eos = tokenizer.eos_id();
        let mut tokens = Vec::new();
        let mut doc_offsets = vec![0];
        for doc in docs {
            tokens.extend(tokenizer.encode(doc.as_ref())?);
            tokens.extend(eos);
            doc_offsets.push(tokens.len());
        }
        Ok(Corpus {
            name: name.to_string(),
            storage: Storage::Owned(tokens),
            doc_offsets,
        })
    }

    /// Memory-maps `<prefix>_ids.npy` and reads the document lengths (`lens`) from
    /// `<prefix>_idx.npz`.
    pub fn open_megatron(prefix: &Path) -> Result<Corpus, DataError> {
        let ids_path = with_suffix(prefix, "_ids.npy");
        let idx_path = with_suffix(prefix, "_idx.npz");
        let file = modelzoo_support::input::open_regular(&ids_path, "Megatron ids")
            .map_err(|e| io_err(&ids_path)(e.into_io_reason()))?;
        // SAFETY: the map is read-only; a concurrent writer truncating the file is the one
        // hazard, as for every memory-mapped reader (numpy's mmap_mode included).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_err(&ids_path))?;
        let header = npy::parse_header(&map).map_err(|message| DataError::Format {
            path: ids_path.clone(),
            message,
        })?;
        let lens = read_npz_array(&idx_path, "lens")?;
        let mut doc_offsets = Vec::with_capacity(lens.len() + 1);
        doc_offsets.push(0usize);
        for (d, &len) in lens.iter().enumerate() {
            let last = doc_offsets[doc_offsets.len() - 1];
            let len = usize::try_from(len).map_err(|_| DataError::Format {
                path: idx_path.clone(),
                message: format!("lens[{d}] = {len} is negative"),
            })?;
            doc_offsets.push(last + len);
        }
        let total = doc_offsets[doc_offsets.len() - 1];
        if total > header.len {
            return Err(DataError::Format {
                path: idx_path,
                message: format!(
                    "document lengths sum to {total} tokens but {} holds {}",
                    ids_path.display(),
                    header.len
                ),
            });
        }
        Ok(Corpus {
            name: ids_path.display().to_string(),
            storage: Storage::Mapped { map, header },
            doc_offsets,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn num_documents(&self) -> usize {
        self.doc_offsets.len() - 1
    }

    pub fn num_tokens(&self) -> usize {
        self.doc_offsets[self.doc_offsets.len() - 1]
    }

    fn token(&self, i: usize) -> i64 {
        match &self.storage {
            Storage::Owned(v) => i64::from(v[i]),
            Storage::Mapped { map, header } => {
                let s = header.dtype.size();
                let at = header.data_offset + i * s;
                header.dtype.read(&map[at..at + s])
            }
        }
    }

    /// Every token of the corpus checked against the model's `vocab` before training: the
    /// first id outside `0..vocab` is [`DataError::TokenOutOfRange`] (its position and
    /// value). Batches check their own ids too, but only when they are drawn — mid-run.
    /// One pass over the tokens (the range of each block first, positions only on a miss).
    pub fn check_vocab(&self, vocab: i64) -> Result<(), DataError> {
        let n = self.num_tokens();
        let bad = |id: i64| id < 0 || id >= vocab;
        let found = match &self.storage {
            Storage::Owned(v) => v[..n]
                .iter()
                .position(|&id| bad(i64::from(id)))
                .map(|i| (i, i64::from(v[i]))),
            Storage::Mapped { map, header } => {
                let size = header.dtype.size();
                let data = &map[header.data_offset..header.data_offset + n * size];
                const BLOCK: usize = 1 << 16;
                let mut found = None;
                for (b, block) in data.chunks(BLOCK * size).enumerate() {
                    let (lo, hi) = block
                        .chunks_exact(size)
                        .map(|e| header.dtype.read(e))
                        .fold((i64::MAX, i64::MIN), |(lo, hi), id| {
                            (lo.min(id), hi.max(id))
                        });
                    if bad(lo) || bad(hi) {
                        found = block
                            .chunks_exact(size)
                            .map(|e| header.dtype.read(e))
                            .enumerate()
                            .find(|&(_, id)| bad(id))
                            .map(|(i, id)| (b * BLOCK + i, id));
                        break;
                    }
                }
                found
            }
        };
        match found {
            None => Ok(()),
            Some((position, id)) => Err(DataError::TokenOutOfRange {
                source_name: self.name.clone(),
                id,
                position,
                vocab,
            }),
        }
    }

    /// Token range of each split (train, valid, test) for `split` ratios, splitting by
    /// document as FleetX's `get_train_valid_test_split_` does.
    pub fn split_ranges(&self, split: &str) -> Result<[std::ops::Range<usize>; 3], DataError> {
        let idx = split_indices(split, self.num_documents())?;
        let tok = |d: usize| self.doc_offsets[d];
        Ok([
            tok(idx[0])..tok(idx[1]),
            tok(idx[1])..tok(idx[2]),
            tok(idx[2])..tok(idx[3]),
        ])
    }
}

/// The largest `.txt` / `.jsonl` corpus file read: text is tokenized into memory, so a larger
/// corpus belongs in Megatron `.npy` / `.npz` form, which is memory-mapped (docs/run_gpt.md,
/// "Input bounds").
pub const MAX_TEXT_FILE_BYTES: u64 = 1 << 30;

/// The longest document read: a paragraph of a `.txt` (lines up to a blank line) or a line of
/// a `.jsonl`. Tokenizing one takes many times its size in memory (a one-line 100 MB corpus
/// took 11.9 GB), and real documents (an article, a book chapter) are far smaller.
pub const MAX_DOCUMENT_BYTES: usize = 4 << 20;

/// Appends the documents of one `.txt` (blank-line separated paragraphs, as [`paragraphs`]
/// splits them) or `.jsonl` (the `"text"` field of each line) file to `docs`, streaming: at
/// most one document is held besides `docs`, and a file or document past its bound
/// ([`MAX_TEXT_FILE_BYTES`], [`MAX_DOCUMENT_BYTES`]) is an error naming it.
fn read_documents(file: &Path, docs: &mut Vec<String>) -> Result<(), DataError> {
    use modelzoo_support::input::{self, Line};
    let f = input::open_bounded(file, MAX_TEXT_FILE_BYTES, "corpus file").map_err(|e| {
        DataError::Io {
            path: file.to_path_buf(),
            source: e.into_io_reason(),
        }
    })?;
    let jsonl = file.extension().is_some_and(|e| e == "jsonl");
    let mut reader = std::io::BufReader::with_capacity(1 << 16, f);
    let mut line = Vec::new();
    let mut paragraph = String::new();
    let format = |message: String| DataError::Format {
        path: file.to_path_buf(),
        message,
    };
    let too_long = |n: usize, what: &str| {
        format(format!(
            "line {n}: {what} is longer than {MAX_DOCUMENT_BYTES} bytes, the longest document read: split it into paragraphs (blank lines), or convert the corpus to Megatron .npy / .npz"
        ))
    };
    let mut n = 0;
    loop {
        let read = input::read_line_bounded(&mut reader, &mut line, MAX_DOCUMENT_BYTES)
            .map_err(io_err(file))?;
        if read == Line::Eof {
            break;
        }
        n += 1;
        if read == Line::TooLong {
            return Err(too_long(
                n,
                if jsonl { "the line" } else { "the paragraph" },
            ));
        }
        let text = std::str::from_utf8(&line)
            .map_err(|e| format(format!("line {n}: not UTF-8 text: {e}")))?;
        if jsonl {
            if text.trim().is_empty() {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| format(format!("line {n}: not JSON: {e}")))?;
            let text = value
                .get("text")
                .and_then(|t| t.as_str())
                .ok_or_else(|| format(format!("line {n}: no string field \"text\"")))?;
            docs.push(text.to_string());
        } else if text.is_empty() {
            end_paragraph(&mut paragraph, docs);
        } else {
            if !paragraph.is_empty() {
                paragraph.push('\n');
            }
            paragraph.push_str(text);
            if paragraph.len() > MAX_DOCUMENT_BYTES {
                return Err(too_long(n, "the paragraph ending here"));
            }
        }
    }
    end_paragraph(&mut paragraph, docs);
    Ok(())
}

/// Moves a finished paragraph (trimmed, when not empty) into `docs`.
fn end_paragraph(paragraph: &mut String, docs: &mut Vec<String>) {
    let p = paragraph.trim();
    if !p.is_empty() {
        docs.push(p.to_string());
    }
    paragraph.clear();
}

/// Blank-line separated paragraphs, trimmed, empty ones dropped.
fn paragraphs(text: &str) -> Vec<&str> {
    text.split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The Megatron prefix `input` names, if it names one: a `*_ids.npy` / `*_idx.npz` file, a
/// prefix path, or a directory holding exactly one pair.
fn megatron_prefix(input: &Path) -> Result<Option<PathBuf>, DataError> {
    let text = input.to_string_lossy();
    for suffix in ["_ids.npy", "_idx.npz"] {
        if let Some(p) = text.strip_suffix(suffix) {
            return Ok(Some(PathBuf::from(p)));
        }
    }
    if !input.is_dir() {
        return Ok(with_suffix(input, "_ids.npy")
            .is_file()
            .then(|| input.to_path_buf()));
    }
    let mut prefixes = Vec::new();
    for entry in std::fs::read_dir(input).map_err(io_err(input))? {
        let entry = entry.map_err(io_err(input))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(p) = name.strip_suffix("_idx.npz") {
            prefixes.push(p.to_string());
        }
    }
    prefixes.sort();
    match prefixes.len() {
        0 => Ok(None),
        1 => Ok(Some(input.join(&prefixes[0]))),
        _ => Err(DataError::ManyPrefixes {
            path: input.to_path_buf(),
            prefixes,
        }),
    }
}

/// `.txt` / `.jsonl` files of `input` (itself, or a directory's, sorted).
fn text_files(input: &Path) -> Result<Vec<PathBuf>, DataError> {
    let is_text = |p: &Path| p.extension().is_some_and(|e| e == "txt" || e == "jsonl");
    if input.is_file() {
        return Ok(vec![input.to_path_buf()]);
    }
    if !input.exists() {
        return Err(DataError::Io {
            path: input.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
        });
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(input).map_err(io_err(input))? {
        let path = entry.map_err(io_err(input))?.path();
        if path.is_file() && is_text(&path) {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(DataError::Empty {
            path: input.to_path_buf(),
        });
    }
    Ok(files)
}

/// One array of an `.npz` (a zip of `.npy` members, stored or deflated).
fn read_npz_array(path: &Path, name: &str) -> Result<Vec<i64>, DataError> {
    let file = modelzoo_support::input::open_regular(path, "Megatron index")
        .map_err(|e| io_err(path)(e.into_io_reason()))?;
    let format = |message: String| DataError::Format {
        path: path.to_path_buf(),
        message,
    };
    let mut zip =
        zip::ZipArchive::new(file).map_err(|e| format(format!("not an .npz (zip) file: {e}")))?;
    let member = format!("{name}.npy");
    let mut entry = zip.by_name(&member).map_err(|_| {
        format(format!(
            "no array `{name}` (FleetX writes document lengths as `lens`)"
        ))
    })?;
    // The document lengths: 8 bytes a document; the bound stops a zip bomb, not real data.
    let mut bytes = Vec::new();
    entry
        .by_ref()
        .take(MAX_TEXT_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format(format!("cannot read {member}: {e}")))?;
    npy::read_all(&bytes).map_err(|m| format(format!("{member}: {m}")))
}

/// FleetX/Megatron `get_train_valid_test_split_`: document index boundaries
/// `[0, train_end, valid_end, size]` for ratios like `949,50,1` (or `949/50/1`).
pub fn split_indices(split: &str, size: usize) -> Result<[usize; 4], DataError> {
    let bad = |reason: &str| DataError::Split {
        split: split.to_string(),
        reason: reason.to_string(),
    };
    let sep = if split.contains(',') { ',' } else { '/' };
    let mut parts = Vec::new();
    for s in split.split(sep) {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| bad(&format!("`{s}` is not a number")))?;
        if !(v >= 0.0 && v.is_finite()) {
            return Err(bad("ratios must be non-negative numbers"));
        }
        parts.push(v);
    }
    if parts.len() > 3 {
        return Err(bad("at most three ratios (train, valid, test)"));
    }
    parts.resize(3, 0.0);
    let sum: f64 = parts.iter().sum();
    if sum <= 0.0 {
        return Err(bad("ratios sum to zero"));
    }
    let mut idx = [0i64; 4];
    for i in 0..3 {
        idx[i + 1] = idx[i] + (parts[i] / sum * size as f64).round_ties_even() as i64;
    }
    let diff = idx[3] - size as i64;
    for v in idx.iter_mut().skip(1) {
        *v -= diff;
    }
    let mut out = [0usize; 4];
    for (o, v) in out.iter_mut().zip(idx) {
        *o = v.clamp(0, size as i64) as usize;
    }
    Ok(out)
}

/// Which of the three splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    Train = 0,
    Valid = 1,
    Test = 2,
}

/// Samples of `seq_len + 1` tokens from one split, in a seeded shuffled order; consecutive
/// samples overlap by one token (Megatron's layout), so each token is predicted once.
#[derive(Debug, Clone)]
pub struct GptDataset {
    corpus: Arc<Corpus>,
    start: usize,
    seq_len: usize,
    order: Vec<usize>,
}

impl GptDataset {
    /// The `which` split of `corpus`; `seed = None` keeps samples in corpus order.
    pub fn new(
        corpus: Arc<Corpus>,
        split: &str,
        which: Split,
        seq_len: usize,
        seed: Option<u64>,
    ) -> Result<GptDataset, DataError> {
        let range = corpus.split_ranges(split)?[which as usize].clone();
        let n = if seq_len == 0 || range.len() <= seq_len {
            0
        } else {
            (range.len() - 1) / seq_len
        };
        let mut order: Vec<usize> = (0..n).collect();
        if let Some(seed) = seed {
            shuffle(&mut order, seed);
        }
        Ok(GptDataset {
            corpus,
            start: range.start,
            seq_len,
            order,
        })
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    pub fn seq_len(&self) -> usize {
        self.seq_len
    }

    /// Token ids of sample `i` (`seq_len + 1` of them), position in the corpus first.
    pub fn sample(&self, i: usize) -> (usize, Vec<i64>) {
        let at = self.start + self.order[i % self.order.len()] * self.seq_len;
        let ids = (at..at + self.seq_len + 1)
            .map(|t| self.corpus.token(t))
            .collect();
        (at, ids)
    }

    /// Batch `index` of `batch` samples (wrapping around the split, i.e. epochs) as
    /// `(input, labels)` int64 CPU tensors `[batch, seq_len]`; every id is checked against
    /// `vocab`.
    pub fn batch(
        &self,
        index: usize,
        batch: usize,
        vocab: i64,
    ) -> Result<(Tensor, Tensor), DataError> {
        let mut flat = Vec::with_capacity(batch * (self.seq_len + 1));
        for j in 0..batch {
            let (at, ids) = self.sample(index * batch + j);
            if let Some((k, &id)) = ids
                .iter()
                .enumerate()
                .find(|(_, &id)| id < 0 || id >= vocab)
            {
                return Err(DataError::TokenOutOfRange {
                    source_name: self.corpus.name.clone(),
                    id,
                    position: at + k,
                    vocab,
                });
            }
            flat.extend(ids);
        }
        let all = Tensor::from_slice(&flat).view([batch as i64, self.seq_len as i64 + 1]);
        let s = self.seq_len as i64;
        Ok((
            all.narrow(1, 0, s).contiguous(),
            all.narrow(1, 1, s).contiguous(),
        ))
    }
}

/// Fisher–Yates with splitmix64: a stable order for a seed on every platform.
fn shuffle(v: &mut [usize], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..v.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_matches_fleetx() {
        // Python (round half to even): get_train_valid_test_split_('949,50,1', 1000) == [0, 949, 999, 1000]
        assert_eq!(
            split_indices("949,50,1", 1000).unwrap(),
            [0, 949, 999, 1000]
        );
        assert_eq!(split_indices("949,50,1", 10).unwrap(), [0, 10, 10, 10]);
        assert_eq!(split_indices("8,1,1", 10).unwrap(), [0, 8, 9, 10]);
        assert_eq!(split_indices("1", 7).unwrap(), [0, 7, 7, 7]);
        assert_eq!(split_indices("98/2/0", 100).unwrap(), [0, 98, 100, 100]);
        assert!(split_indices("a,b", 10).is_err());
        assert!(split_indices("0,0,0", 10).is_err());
        assert!(split_indices("1,1,1,1", 10).is_err());
    }

    #[test]
    fn shuffle_is_a_seeded_permutation() {
        let mut a: Vec<usize> = (0..100).collect();
        let mut b = a.clone();
        shuffle(&mut a, 7);
        shuffle(&mut b, 7);
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(a, sorted);
    }

    #[test]
    fn builtin_corpus_is_small_and_has_paragraphs() {
        assert!(BUILTIN_CORPUS.len() < 400_000);
        assert!(paragraphs(BUILTIN_CORPUS).len() > 100);
    }
}
