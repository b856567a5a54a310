//! BERT's data for the engine: each task's examples ([`pretrain`], [`classify`], [`squad`])
//! as [`Samples`], walked by [`Batches`] — the engine's `BatchSource` of [`BertBatch`]es,
//! shuffled per data epoch from the seed, sharded over data-parallel ranks, wrapping around
//! when a run (`--step`) needs more batches than one pass holds. Everything a batch draws
//! (the shuffle, the masked positions) derives from (seed, sample position), so a resumed run
//! reads what the uninterrupted one did and N ranks with batch b read, step for step, what one
//! process with batch N·b reads.

pub mod classify;
pub mod pretrain;
pub mod squad;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use std::path::{Path, PathBuf};

use modelzoo_engine::rng::SplitMix64;
use modelzoo_engine::{BatchError, BatchSource};
use tch::Tensor;

use crate::tokenizer::TokenizerError;

/// Why a dataset cannot be used: each error names the file (and line) and what was expected.
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
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    #[error("{0}")]
    Other(String),
}

/// One micro-batch: the encoder's input (int64 `[batch, seq]` each) and the task's targets.
#[derive(Debug)]
pub struct BertBatch {
    pub input_ids: Tensor,
    pub token_type_ids: Tensor,
    /// 1 for real tokens, 0 for padding.
    pub attention_mask: Tensor,
    pub target: Target,
}

/// What a batch is trained / evaluated against.
#[derive(Debug)]
pub enum Target {
    /// Masked-LM and next-sentence prediction.
    Pretrain {
        /// Flat indices (`row × seq + position`, int64 `[n]`) of the masked tokens.
        mlm_positions: Tensor,
        /// Their original ids (int64 `[n]`).
        mlm_labels: Tensor,
        /// 0: segment B follows A, 1: B is a random segment (int64 `[batch]`).
        next_sentence: Tensor,
    },
    /// Class ids (int64 `[batch]`).
    Classification { labels: Tensor },
    /// Answer start / end token positions (int64 `[batch]`, 0 = `[CLS]` when the window
    /// does not hold the answer) and which features of the split the rows are (evaluation
    /// maps predicted spans back to their example's text).
    Squad {
        start: Tensor,
        end: Tensor,
        features: Vec<usize>,
    },
}

impl BertBatch {
    /// Sequences in the batch.
    pub fn rows(&self) -> usize {
        self.input_ids.size().first().copied().unwrap_or(0) as usize
    }
}

/// A task's examples, ready to batch.
pub trait Samples: Send + Sync {
    /// Examples in one pass.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The batch of examples `picks`: (example index, stream position) pairs — the position
    /// seeds what the batch draws for that example (pretraining's masking).
    fn batch(&self, picks: &[(usize, u64)]) -> Result<BertBatch, BatchError>;
    /// The largest token id any batch can hold (the examples' ids, the special tokens, and
    /// for masked-LM the random replacements' range), checked against the model's
    /// vocabulary before training.
    fn max_token_id(&self) -> u32;
}

/// The largest of `specials` and every id of `seqs`.
pub(crate) fn max_id<'a>(specials: &[u32], seqs: impl Iterator<Item = &'a [u32]>) -> u32 {
    seqs.flat_map(|s| s.iter().copied())
        .chain(specials.iter().copied())
        .max()
        .unwrap_or(0)
}

/// The engine's splitmix64 with a stream mixed into the seed: a small, stable generator for
/// data decisions (same sequence on every platform).
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    /// A generator for `seed` mixed with `stream` (independent sequences per stream).
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut r = SplitMix64::new(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next_u64();
        Rng(r)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        self.0.next_f64()
    }

    /// Uniform in `[0, n)` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `[lo, hi]`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// Fisher–Yates.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// The batches of one split for the engine. Training (`shuffle`): the split is an endless
/// stream of data epochs, each a fresh permutation from (seed, data epoch); the engine's
/// epoch `e`, batch `i`, rank `r` of `world` reads the stream's global batch
/// `(e × per_epoch + i) × world + r`. Validation: the split in order, once, the last batch
/// possibly short.
pub struct Batches<S: Samples> {
    samples: Arc<S>,
    micro: usize,
    per_epoch: usize,
    shard: (usize, usize),
    /// `Some(seed)`: shuffled and wrapping (training); `None`: in order (validation).
    seed: Option<u64>,
    /// The last data epoch's permutation.
    cached: RefCell<Option<(u64, Rc<Vec<usize>>)>>,
}

impl<S: Samples> Batches<S> {
    /// Training batches: `per_epoch` batches of `micro` per engine epoch for each of `world`
    /// ranks (this one `rank`).
    pub fn train(
        samples: Arc<S>,
        micro: usize,
        per_epoch: usize,
        seed: u64,
        rank: usize,
        world: usize,
    ) -> Batches<S> {
        let world = world.max(1);
        Batches {
            samples,
            micro: micro.max(1),
            per_epoch,
            shard: (rank.min(world - 1), world),
            seed: Some(seed),
            cached: RefCell::new(None),
        }
    }

    /// Validation batches: the split in order, `micro` at a time.
    pub fn eval(samples: Arc<S>, micro: usize) -> Batches<S> {
        let micro = micro.max(1);
        let per_epoch = samples.len().div_ceil(micro);
        Batches {
            samples,
            micro,
            per_epoch,
            shard: (0, 1),
            seed: None,
            cached: RefCell::new(None),
        }
    }

    /// The permutation of data epoch `e`.
    fn order(&self, seed: u64, e: u64) -> Rc<Vec<usize>> {
        if let Some((ce, order)) = self.cached.borrow().as_ref() {
            if *ce == e {
                return Rc::clone(order);
            }
        }
        let mut order: Vec<usize> = (0..self.samples.len()).collect();
        Rng::new(seed, e.wrapping_add(1)).shuffle(&mut order);
        let order = Rc::new(order);
        *self.cached.borrow_mut() = Some((e, Rc::clone(&order)));
        order
    }

    fn batch_at(&self, epoch: u64, i: usize) -> Result<BertBatch, BatchError> {
        let n = self.samples.len();
        let Some(seed) = self.seed else {
            let picks: Vec<(usize, u64)> = (i * self.micro..((i + 1) * self.micro).min(n))
                .map(|k| (k, k as u64))
                .collect();
            return self.samples.batch(&picks);
        };
        let (rank, world) = self.shard;
        let global = (epoch * self.per_epoch as u64 + i as u64) * world as u64 + rank as u64;
        let first = global * self.micro as u64;
        let picks: Vec<(usize, u64)> = (first..first + self.micro as u64)
            .map(|t| (self.order(seed, t / n as u64)[(t % n as u64) as usize], t))
            .collect();
        self.samples.batch(&picks)
    }
}

impl<S: Samples> BatchSource<BertBatch> for Batches<S> {
    fn batches_per_epoch(&self) -> usize {
        self.per_epoch
    }

    fn epoch_batches(
        &self,
        epoch: u64,
        skip: usize,
    ) -> Box<dyn Iterator<Item = Result<BertBatch, BatchError>> + '_> {
        if self.samples.is_empty() {
            return Box::new(std::iter::empty());
        }
        Box::new((skip..self.per_epoch).map(move |i| self.batch_at(epoch, i)))
    }
}

/// `[CLS] a [SEP] (b [SEP])`, its token types (0 up to the first `[SEP]`, 1 after) and
/// attention mask, padded with `pad` to `seq`.
pub fn pack_pair(
    cls: u32,
    sep: u32,
    pad: u32,
    a: &[u32],
    b: Option<&[u32]>,
    seq: usize,
) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let mut ids = Vec::with_capacity(seq);
    let mut types = Vec::with_capacity(seq);
    ids.push(cls as i64);
    ids.extend(a.iter().map(|&t| t as i64));
    ids.push(sep as i64);
    types.resize(ids.len(), 0);
    if let Some(b) = b {
        ids.extend(b.iter().map(|&t| t as i64));
        ids.push(sep as i64);
        types.resize(ids.len(), 1);
    }
    let real = ids.len();
    let mut mask = vec![1i64; real];
    ids.resize(seq.max(real), pad as i64);
    types.resize(seq.max(real), 0);
    mask.resize(seq.max(real), 0);
    (ids, types, mask)
}

/// Cuts the longer of `a` and `b` (its end) until they fit `max` tokens together: BERT's
/// `_truncate_seq_pair` for fine-tuning inputs.
pub fn truncate_pair(a: &mut Vec<u32>, b: &mut Vec<u32>, max: usize) {
    while a.len() + b.len() > max {
        if a.len() >= b.len() {
            a.pop();
        } else {
            b.pop();
        }
    }
}

/// Stacks rows of equal length into an int64 tensor `[rows, len]`.
pub fn stack(rows: usize, flat: Vec<i64>) -> Tensor {
    let len = flat.len().checked_div(rows).unwrap_or(0);
    Tensor::from_slice(&flat).view([rows as i64, len as i64])
}

/// The text of a data file (`--dataset_path` and what it holds): a regular file (a FIFO would
/// block) of at most [`modelzoo_text::corpus::MAX_TEXT_FILE_BYTES`], read whole because these
/// formats (SQuAD JSON, TSV, JSONL, text) are parsed whole (docs/run_bert.md, "Input bounds").
pub(crate) fn read_text(path: &Path) -> Result<String, DataError> {
    modelzoo_support::input::read_to_string_bounded(
        path,
        modelzoo_text::corpus::MAX_TEXT_FILE_BYTES,
        "data file",
    )
    .map_err(|e| DataError::Io {
        path: path.to_path_buf(),
        source: e.into_io_reason(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples whose batch records the picks.
    struct Picks(usize);

    impl Samples for Picks {
        fn len(&self) -> usize {
            self.0
        }
        fn max_token_id(&self) -> u32 {
            self.0 as u32
        }
        fn batch(&self, picks: &[(usize, u64)]) -> Result<BertBatch, BatchError> {
            let ids: Vec<i64> = picks.iter().map(|p| p.0 as i64).collect();
            let pos: Vec<i64> = picks.iter().map(|p| p.1 as i64).collect();
            let n = ids.len() as i64;
            Ok(BertBatch {
                input_ids: Tensor::from_slice(&ids).view([n, 1]),
                token_type_ids: Tensor::from_slice(&pos).view([n, 1]),
                attention_mask: Tensor::ones([n, 1], (tch::Kind::Int64, tch::Device::Cpu)),
                target: Target::Classification {
                    labels: Tensor::zeros([n], (tch::Kind::Int64, tch::Device::Cpu)),
                },
            })
        }
    }

    fn ids(b: &BertBatch) -> Vec<i64> {
        Vec::<i64>::try_from(b.input_ids.flatten(0, -1)).unwrap()
    }

    #[test]
    fn ranks_read_what_one_process_with_their_joint_batch_reads() {
        let s = Arc::new(Picks(10));
        let one = Batches::train(Arc::clone(&s), 4, 6, 7, 0, 1);
        let r0 = Batches::train(Arc::clone(&s), 2, 6, 7, 0, 2);
        let r1 = Batches::train(Arc::clone(&s), 2, 6, 7, 1, 2);
        for epoch in 0..2 {
            let whole: Vec<BertBatch> = one.epoch_batches(epoch, 0).map(Result::unwrap).collect();
            let a: Vec<BertBatch> = r0.epoch_batches(epoch, 0).map(Result::unwrap).collect();
            let b: Vec<BertBatch> = r1.epoch_batches(epoch, 0).map(Result::unwrap).collect();
            for i in 0..6 {
                let mut joint = ids(&a[i]);
                joint.extend(ids(&b[i]));
                assert_eq!(ids(&whole[i]), joint, "epoch {epoch} batch {i}");
            }
        }
        // Each data epoch is a permutation; the stream wraps into the next one.
        let all: Vec<i64> = one
            .epoch_batches(0, 0)
            .flat_map(|b| ids(&b.unwrap()))
            .collect();
        let mut first: Vec<i64> = all[..10].to_vec();
        first.sort();
        assert_eq!(first, (0..10).collect::<Vec<_>>());
        assert_ne!(all[..10], all[10..20]);
        // Skipping resumes mid-epoch with the same batches.
        let skipped = one.epoch_batches(1, 3).next().unwrap().unwrap();
        let third = one.epoch_batches(1, 0).nth(3).unwrap().unwrap();
        assert_eq!(ids(&skipped), ids(&third));
    }

    #[test]
    fn validation_is_in_order_with_a_short_last_batch() {
        let v = Batches::eval(Arc::new(Picks(5)), 2);
        let all: Vec<Vec<i64>> = v.epoch_batches(0, 0).map(|b| ids(&b.unwrap())).collect();
        assert_eq!(all, vec![vec![0, 1], vec![2, 3], vec![4]]);
    }

    #[test]
    fn pairs_pack_and_truncate_like_bert() {
        let (ids, types, mask) = pack_pair(2, 3, 0, &[10, 11], Some(&[12]), 8);
        assert_eq!(ids, [2, 10, 11, 3, 12, 3, 0, 0]);
        assert_eq!(types, [0, 0, 0, 0, 1, 1, 0, 0]);
        assert_eq!(mask, [1, 1, 1, 1, 1, 1, 0, 0]);
        let (mut a, mut b) = (vec![1, 2, 3, 4, 5], vec![6, 7]);
        truncate_pair(&mut a, &mut b, 4);
        assert_eq!((a, b), (vec![1, 2], vec![6, 7]));
    }
}
