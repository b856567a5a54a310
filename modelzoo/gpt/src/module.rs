//! GPT as an engine `BasicModule`: the shared language-model module of `modelzoo-text`
//! ([`modelzoo_text::lm::LmModule`]: next-token cross entropy, AdamW with FleetX's cosine
//! schedule, tokens/s, `train.mfu`, `val.loss` / `val.ppl`) around [`Gpt`].

use modelzoo_text::lm::{LmModule, TokenModel};
use tch::Tensor;

/// The device peak `train.mfu` is measured against (shared with run_llama).
pub use modelzoo_text::mfu::peak_flops;

use crate::model::{Gpt, ModelError};

/// A GPT and its training recipe.
pub type GptModule = LmModule<Gpt>;

impl TokenModel for Gpt {
    type Error = ModelError;
    const NAME: &'static str = "GPT";
    fn logits(&self, ids: &Tensor, train: bool) -> Result<Tensor, ModelError> {
        self.forward(ids, None, train)
    }
    fn train_flops_per_token(&self, seq_len: i64) -> f64 {
        Gpt::train_flops_per_token(self, seq_len)
    }
}
