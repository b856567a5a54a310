//! `modelzoo-vision`: image data for any image model of the zoo — the datasets (synthetic,
//! ImageFolder, CIFAR-10), torchvision's transforms, and the deterministic parallel [`Loader`]
//! that turns a [`Dataset`] into the engine's [`modelzoo_engine::BatchSource`] of
//! [`ImageBatch`]es.

pub mod classify;
pub mod datasets;
pub mod loader;
pub mod recipe;
pub mod transforms;

pub use classify::{
    classification_eval, loader_host_bytes, loader_host_bytes_u8, train_val_loaders, ImageData,
    PREFETCH,
};
pub use datasets::{
    train_and_val, Cifar10, DataError, ImageFolder, SharedDataset, Split, Synthetic,
};
pub use loader::{
    BatchPixels, Batches, Dataset, ImageBatch, Loader, LoaderOptions, Sample, SampleError,
};
pub use transforms::{DeviceNormalizer, Normalize};
