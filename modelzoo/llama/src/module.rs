//! LLaMA as an engine `BasicModule`: the shared language-model module of `modelzoo-text`
//! ([`modelzoo_text::lm::LmModule`]: next-token cross entropy, AdamW with FleetX's cosine
//! schedule, tokens/s, `train.mfu`, `val.loss` / `val.ppl` — the same metrics as run_gpt)
//! around [`Llama`].

use modelzoo_text::lm::{LmModule, TokenModel};
use tch::Tensor;

/// The device peak `train.mfu` is measured against (shared with run_gpt).
pub use modelzoo_text::mfu::peak_flops;

use crate::model::{Llama, ModelError};

/// A LLaMA and its training recipe.
pub type LlamaModule = LmModule<Llama>;

impl TokenModel for Llama {
    type Error = ModelError;
    const NAME: &'static str = "LLaMA";
    fn logits(&self, ids: &Tensor, train: bool) -> Result<Tensor, ModelError> {
        self.forward(ids, None, train)
    }
    fn train_flops_per_token(&self, seq_len: i64) -> f64 {
        Llama::train_flops_per_token(self, seq_len)
    }
}
