//! Token batches for the engine: a [`GptDataset`] walked as a [`BatchSource`] of
//! [`TokenBatch`]es, sharded over data-parallel ranks.

use modelzoo_engine::{BatchError, BatchSource};
use tch::Tensor;

use crate::corpus::GptDataset;

/// One micro-batch: `input` and `labels` int64 `[batch, seq]` (labels = input shifted by one).
#[derive(Debug)]
pub struct TokenBatch {
    pub input: Tensor,
    pub labels: Tensor,
}

/// The token batches of one split for the engine: batch `i` of epoch `e` is
/// [`GptDataset::batch`] `e × per_epoch + i`, so the shuffled split is walked in order and
/// wraps around as Megatron's sample index does. A token id outside the vocabulary is the
/// batch's error, which stops the run.
pub struct TokenBatches {
    dataset: GptDataset,
    micro: usize,
    vocab: i64,
    per_epoch: usize,
    /// (rank, world size) under data parallel: batch `i` is the data's batch `i × world + rank`.
    shard: (usize, usize),
}

impl TokenBatches {
    /// `per_epoch` = batches per epoch (at least one full pass is not required: FleetX runs
    /// are sized by `max_steps`, the data wraps around).
    pub fn new(dataset: GptDataset, micro: usize, vocab: i64, per_epoch: usize) -> TokenBatches {
        TokenBatches {
            dataset,
            micro: micro.max(1),
            vocab,
            per_epoch,
            shard: (0, 1),
        }
    }

    /// These batches as rank `rank` of `world`: rank r's batch i is the data's batch
    /// `i × world + r`, so the ranks read disjoint samples and together see, step by step,
    /// the samples one process with a `world`× larger batch would.
    pub fn sharded(mut self, rank: usize, world: usize) -> TokenBatches {
        let world = world.max(1);
        self.shard = (rank.min(world - 1), world);
        self
    }
}

impl BatchSource<TokenBatch> for TokenBatches {
    fn batches_per_epoch(&self) -> usize {
        self.per_epoch
    }
    fn epoch_batches(
        &self,
        epoch: u64,
        skip: usize,
    ) -> Box<dyn Iterator<Item = Result<TokenBatch, BatchError>> + '_> {
        let base = epoch as usize * self.per_epoch;
        let (rank, world) = self.shard;
        Box::new((skip..self.per_epoch).map(move |i| {
            let (input, labels) =
                self.dataset
                    .batch((base + i) * world + rank, self.micro, self.vocab)?;
            Ok(TokenBatch { input, labels })
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::corpus::{Corpus, DataError, Split};
    use crate::tokenizer::Tokenizer;

    fn batches(vocab: i64) -> TokenBatches {
        let tok = Tokenizer::load(None).unwrap();
        let docs = ["abcdefghijklmnop", "qrstuvwxyz012345"];
        let corpus = Arc::new(Corpus::from_documents("two", docs.to_vec(), &tok).unwrap());
        let ds = GptDataset::new(corpus, "1", Split::Train, 4, None).unwrap();
        TokenBatches::new(ds, 2, vocab, 3)
    }

    #[test]
    fn batches_are_shifted_windows_and_shards_interleave() {
        let all: Vec<TokenBatch> = batches(300)
            .epoch_batches(0, 0)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(all.len(), 3);
        let x = Vec::<Vec<i64>>::try_from(&all[0].input).unwrap();
        let y = Vec::<Vec<i64>>::try_from(&all[0].labels).unwrap();
        assert_eq!(x[0][1..], y[0][..3], "labels are the input shifted by one");
        let r1: Vec<TokenBatch> = batches(300)
            .sharded(1, 2)
            .epoch_batches(0, 0)
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(all[1].input.equal(&r1[0].input), "rank 1 reads batch 1");
        let skipped = batches(300).epoch_batches(0, 2).next().unwrap().unwrap();
        assert!(skipped.input.equal(&all[2].input), "skip resumes mid-epoch");
    }

    #[test]
    fn a_token_outside_the_vocabulary_is_the_batch_error() {
        let err = batches(10).epoch_batches(0, 0).next().unwrap().unwrap_err();
        let data = err
            .downcast_ref::<DataError>()
            .expect("the data crate's error");
        assert!(
            matches!(data, DataError::TokenOutOfRange { vocab: 10, .. }),
            "{data:?}"
        );
        assert!(
            err.to_string().contains("outside the model vocabulary"),
            "{err}"
        );
    }
}
