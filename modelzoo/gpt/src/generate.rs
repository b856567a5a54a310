//! Zero-shot text generation with GPT's KV cache: the zoo's shared decoding loop
//! ([`modelzoo_text::generate`]: greedy, or sampling with temperature, top-k and top-p,
//! deterministic per seed) driven by [`Gpt`]'s cached forward.

use modelzoo_engine::TrainDevice;
use modelzoo_text::generate::CausalLm;
use tch::Tensor;

use crate::config::Generation;
use crate::model::{Gpt, KvCache, ModelError};

impl CausalLm for Gpt {
    type Cache = KvCache;
    type Error = ModelError;
    fn vocab_size(&self) -> i64 {
        self.config().vocab_size
    }
    fn forward_cached(&self, ids: &Tensor, cache: &mut KvCache) -> Result<Tensor, ModelError> {
        self.forward(ids, Some(cache), false)
    }
}

/// Generated continuations (prompt excluded) for one non-empty prompt,
/// `num_return_sequences` of them; `eos` ends a sequence (it is not included); `device` is
/// where the model's variables live (`&tch::Device::Cpu` for a CPU model, a
/// `device_sdaa::Device` after `move_var_store`). The decoders' shared
/// [`modelzoo_text::decoder::generate`].
pub fn generate(
    model: &Gpt,
    prompt: &[i64],
    params: &Generation,
    eos: Option<i64>,
    seed: u64,
    device: &dyn TrainDevice,
) -> Result<Vec<Vec<i64>>, ModelError> {
    modelzoo_text::decoder::generate(model, prompt, params, eos, seed, device)
}
