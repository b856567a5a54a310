//! The seam between a model's data and the training loop: a [`BatchSource`] yields the batches
//! of each epoch, or the error that stops the run. The data itself lives with its kind
//! (`modelzoo-vision` for images, `modelzoo-text` for token streams), not in the engine.

/// Why a batch could not be produced (a token id outside the vocabulary, an unreadable shard):
/// any error, boxed so each data crate keeps its own error type. The engine stops the run with
/// [`crate::EngineError::Data`], which shows this error's message unchanged.
pub type BatchError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Where the engine gets its batches: anything that yields a model's batch type epoch by epoch
/// (the image loader of `modelzoo-vision`, the token batches of `modelzoo-text`).
pub trait BatchSource<B> {
    /// Batches in one epoch.
    fn batches_per_epoch(&self) -> usize;
    /// The batches of `epoch` in order, skipping the first `skip` (resume mid-epoch) without
    /// loading them. An `Err` ends the run; a sample a source can do without (a corrupt image)
    /// is skipped and counted instead, see [`Self::skipped`].
    fn epoch_batches(
        &self,
        epoch: u64,
        skip: usize,
    ) -> Box<dyn Iterator<Item = Result<B, BatchError>> + '_>;
    /// Samples skipped so far because they failed to load.
    fn skipped(&self) -> u64 {
        0
    }
    /// Why the first skipped sample failed to load (its file and the error).
    fn first_skip(&self) -> Option<String> {
        None
    }
}
