//! What every image classifier of the zoo shares around its network: the train / validation
//! loaders of a run (sharded for data parallel) and the validation step's loss and top-1 /
//! top-5 hits, so `run_resnet`, `run_vit` and the next model report the same metrics the same
//! way.

use std::path::Path;

use tch::{Kind, Reduction, Tensor};

use modelzoo_engine::{runner, EvalOutput};

use crate::datasets::{train_and_val, DataError, SharedDataset};
use crate::loader::{Loader, LoaderOptions};

/// Batches a classifier's loader keeps ready ahead of the step (`LoaderOptions::prefetch`).
pub const PREFETCH: usize = 2;

/// The images a classifier's run reads (`--dataset_path`: CIFAR-10 or an ImageFolder; without
/// it synthetic images) and how it batches them: the standard arguments every image model has.
#[derive(Debug, Clone, Copy)]
pub struct ImageData<'a> {
    pub dataset_path: Option<&'a Path>,
    pub synthetic_samples: usize,
    pub num_classes: usize,
    pub image_size: usize,
    pub batch_size: usize,
    pub num_workers: usize,
    pub seed: u64,
}

impl ImageData<'_> {
    /// This process's train and validation loaders (rank `rank` of `world`): the sets of
    /// [`train_and_val`] through [`train_val_loaders`], [`PREFETCH`] batches ahead.
    pub fn loaders(&self, rank: usize, world: usize) -> Result<(Loader, Loader), DataError> {
        let (train_set, val_set) = train_and_val(
            self.dataset_path,
            self.synthetic_samples,
            self.num_classes,
            self.image_size,
            self.seed,
        )?;
        let opts = LoaderOptions {
            batch_size: self.batch_size,
            shuffle: true,
            drop_last: true,
            num_workers: self.num_workers,
            prefetch: PREFETCH,
            seed: self.seed,
        };
        train_val_loaders(train_set, val_set, opts, rank, world)
    }
}

/// The host memory the loader of `batch` fp32 images of `image`² pixels holds at most
/// ([`PREFETCH`] batches ready and one being filled), plus with the synthetic set of
/// `synthetic` training samples its class prototypes (`num_classes` × 3 × `image`² fp32, for the
/// train and the validation set) and the sample order of an epoch (one index per training and
/// validation sample), and how a memory message describes it. Products saturate (see
/// `runner::bytes`), so an absurd `--synthetic_samples` is refused before anything is allocated.
pub fn loader_host_bytes(
    batch: usize,
    image: usize,
    num_classes: usize,
    synthetic: Option<usize>,
) -> (u64, String) {
    loader_bytes(4, batch, image, num_classes, synthetic)
}

/// [`loader_host_bytes`] for a loader of uint8 batches ([`crate::Loader::uint8`]): one byte a
/// pixel value instead of four.
pub fn loader_host_bytes_u8(
    batch: usize,
    image: usize,
    num_classes: usize,
    synthetic: Option<usize>,
) -> (u64, String) {
    loader_bytes(1, batch, image, num_classes, synthetic)
}

fn loader_bytes(
    value_bytes: u64,
    batch: usize,
    image: usize,
    num_classes: usize,
    synthetic: Option<usize>,
) -> (u64, String) {
    let (b, s, k) = (batch as u64, image as u64, num_classes as u64);
    let input = runner::bytes(&[b, 3, s, s, value_bytes]);
    let mut counted = format!(
        "input {batch} x 3 x {image} x {image} {} ({} batches in the loader)",
        if value_bytes == 1 { "uint8" } else { "fp32" },
        PREFETCH + 1
    );
    let synthetic_bytes = match synthetic {
        Some(n) => {
            counted.push_str(&format!(
                ", its synthetic class prototypes and the order of its {n} + {} samples",
                (n / 4).max(1)
            ));
            let samples = (n as u64).saturating_add((n as u64 / 4).max(1));
            runner::bytes_sum(&[
                runner::bytes(&[2, k, 3, s, s, 4]),
                runner::bytes(&[samples, std::mem::size_of::<usize>() as u64]),
            ])
        }
        None => 0,
    };
    (
        runner::bytes_sum(&[
            runner::bytes(&[input, PREFETCH as u64 + 1]),
            synthetic_bytes,
        ]),
        counted,
    )
}

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
