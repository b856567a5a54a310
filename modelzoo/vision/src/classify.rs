//! What every image classifier of the zoo shares around its network: the train / validation
//! loaders of a run (sharded for data parallel) and the validation step's loss and top-1 /
//! top-5 hits, so `run_resnet`, `run_vit` and the next model report the same metrics the same
//! way.

use tch::{Kind, Reduction, Tensor};

use modelzoo_engine::EvalOutput;

use crate::datasets::{DataError, SharedDataset};
use crate::loader::{Loader, LoaderOptions};

/// The loaders of a run: `train` shuffled, dropping the last partial batch and sharded as rank
/// `rank` of `world`; `val` in order, keeping every sample (evaluated on each rank alike).
/// `opts` gives the batch, workers, prefetch and seed. A training set with less than one batch
/// per rank is refused (nothing would train).
pub fn train_val_loaders(
    train_set: SharedDataset,
    val_set: SharedDataset,
    opts: LoaderOptions,
    rank: usize,
    world: usize,
) -> Result<(Loader, Loader), DataError> {
    let train_opts = LoaderOptions {
        shuffle: true,
        drop_last: true,
        ..opts
    };
    let samples = train_set.len();
    let train = Loader::new(train_set, train_opts).sharded(rank, world);
    if train.batches_per_epoch() == 0 {
        return Err(DataError::FewerThanOneBatch {
            samples,
            batch_size: opts.batch_size,
            world,
        });
    }
    let val = Loader::new(
        val_set,
        LoaderOptions {
            shuffle: false,
            drop_last: false,
            ..opts
        },
    );
    Ok((train, val))
}

/// A classifier's validation step from its `logits` (any float kind, compared in fp32) and
/// integer `labels`: the summed cross-entropy (no label smoothing: `val.loss` is the plain
/// loss whatever the training used) and the top-1 / top-5 hit counts (top-k with k = at most
/// `num_classes`), kept on the device for the engine to total.
pub fn classification_eval(logits: &Tensor, labels: &Tensor, num_classes: i64) -> EvalOutput {
    let logits = logits.to_kind(Kind::Float);
    let loss_sum = logits.cross_entropy_loss::<Tensor>(labels, None, Reduction::Sum, -100, 0.0);
    let k = num_classes.min(5);
    let (_, top) = logits.topk(k, 1, true, true);
    let hit = top.eq_tensor(&labels.unsqueeze(1));
    let top1 = hit.narrow(1, 0, 1).sum(Kind::Int64);
    let top5 = hit.sum(Kind::Int64);
    EvalOutput {
        loss_sum,
        counts: vec![("top1", top1), ("top5", top5)],
        samples: labels.size()[0] as usize,
    }
}
