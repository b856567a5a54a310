//! What every decoder-only network of the zoo (GPT, LLaMA) does around its layers, written
//! once: the input checks and their errors ([`ModelError`]), the KV cache of incremental
//! decoding ([`KvCache`]), the causal mask offset by the cached positions, and running a layer
//! under activation recompute. The layers themselves (attention, MLP, norms) are the models'.

use modelzoo_engine::TrainDevice;
use tch::{Kind, Tensor};

use crate::config::Generation;
use crate::generate::CausalLm;

/// Input the model cannot take (too long for its positions, wrong rank).
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("sequence of {total} positions (cache {past} + input {new}) exceeds max_position_embeddings = {max}; shorten the prompt or max_dec_len")]
    TooLong {
        past: i64,
        new: i64,
        total: i64,
        max: i64,
    },
    #[error(
        "input ids must be a non-empty [batch, seq] tensor of integers, got shape {shape:?} kind {kind:?}"
    )]
    BadInput { shape: Vec<i64>, kind: Kind },
    #[error("KV cache holds batch {cache}, input has batch {input}")]
    CacheBatch { cache: i64, input: i64 },
    #[error("activation recompute failed: {0}")]
    Recompute(String),
}

/// Keys and values of every layer seen so far, for incremental decoding (for a grouped-query
/// model, its key/value heads before the repeat).
#[derive(Debug, Default)]
pub struct KvCache {
    layers: Vec<Option<(Tensor, Tensor)>>,
}

impl KvCache {
    pub fn new() -> KvCache {
        KvCache::default()
    }

    /// Positions already cached.
    pub fn len(&self) -> i64 {
        match self.layers.first() {
            Some(Some((k, _))) => k.size()[2],
            _ => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn batch(&self) -> Option<i64> {
        match self.layers.first() {
            Some(Some((k, _))) => Some(k.size()[0]),
            _ => None,
        }
    }

    /// Layer `i`'s slot (the cache has one per layer once [`Input::check`] has seen it).
    pub fn slot(&mut self, i: usize) -> &mut Option<(Tensor, Tensor)> {
        &mut self.layers[i]
    }
}

/// The checked shape of one forward's input ids.
#[derive(Debug, Clone, Copy)]
pub struct Input {
    pub batch: i64,
    /// New positions.
    pub len: i64,
    /// Positions already in the cache (0 without one).
    pub past: i64,
}

impl Input {
    /// Checks `ids` (`[batch, seq]` of integers; `seq` 0 only where `empty_ok`) against the
    /// cache (same batch) and the model's `max_positions`, and gives the cache a slot for
    /// each of `layers` layers.
    pub fn check(
        ids: &Tensor,
        cache: Option<&mut KvCache>,
        layers: usize,
        max_positions: i64,
        empty_ok: bool,
    ) -> Result<Input, ModelError> {
        let size = ids.size();
        let kind = ids.kind();
        if size.len() != 2
            || (size[1] == 0 && !empty_ok)
            || !matches!(kind, Kind::Int64 | Kind::Int | Kind::Int16 | Kind::Uint8)
        {
            return Err(ModelError::BadInput { shape: size, kind });
        }
        let (batch, len) = (size[0], size[1]);
        let past = cache.as_ref().map_or(0, |c| c.len());
        if let Some(cb) = cache.as_ref().and_then(|c| c.batch()) {
            if cb != batch {
                return Err(ModelError::CacheBatch {
                    cache: cb,
                    input: batch,
                });
            }
        }
        if past + len > max_positions {
            return Err(ModelError::TooLong {
                past,
                new: len,
                total: past + len,
                max: max_positions,
            });
        }
        if let Some(c) = cache {
            c.layers.resize_with(layers, || None);
        }
        Ok(Input { batch, len, past })
    }

    /// With cached positions and several new ones, the causal mask offset by the cache length
    /// (sdpa's `is_causal` aligns to the top-left corner); `None` otherwise. Built from `ids`
    /// so it lands on its device (`tch::Device` cannot name SDAA).
    pub fn offset_mask(&self, ids: &Tensor) -> Option<Tensor> {
        let (past, t) = (self.past, self.len);
        (past > 0 && t > 1).then(|| {
            let row = ids.select(0, 0).ones_like().to_kind(Kind::Bool);
            Tensor::cat(&[row.narrow(0, 0, 1).expand([past], true), row], 0)
                .unsqueeze(0)
                .expand([t, past + t], true)
                .tril(past)
        })
    }
}

/// Appends the new keys and values `[b, heads, t, d]` to a layer's cache slot (when there is
/// one) and returns all of them.
pub fn cached_kv(
    slot: Option<&mut Option<(Tensor, Tensor)>>,
    k: Tensor,
    v: Tensor,
) -> (Tensor, Tensor) {
    let Some(slot) = slot else {
        return (k, v);
    };
    let (k, v) = match slot.take() {
        Some((pk, pv)) => (Tensor::cat(&[pk, k], 2), Tensor::cat(&[pv, v], 2)),
        None => (k, v),
    };
    *slot = Some((k.shallow_clone(), v.shallow_clone()));
    (k, v)
}

/// One layer run under activation recompute (`device_sdaa::recompute`): `inputs` are saved,
/// the layer's activations are recomputed in backward. `preserve_rng` when the layer draws
/// random numbers (dropout), so the rerun draws the same ones.
pub fn recomputed<F>(inputs: &[&Tensor], preserve_rng: bool, layer: F) -> Result<Tensor, ModelError>
where
    F: Fn(&[Tensor]) -> Tensor + Send + 'static,
{
    let outs = device_sdaa::recompute::checkpoint(inputs, preserve_rng, move |io| vec![layer(io)])
        .map_err(|e| ModelError::Recompute(e.to_string()))?;
    outs.into_iter()
        .next()
        .ok_or_else(|| ModelError::Recompute("the layer returned no output".into()))
}

/// A decoder's zero-shot generation: [`crate::generate::generate`] on a non-empty `prompt`
/// (an empty one is [`ModelError::BadInput`]). `device` is where the model's variables live.
pub fn generate<M: CausalLm<Error = ModelError>>(
    model: &M,
    prompt: &[i64],
    params: &Generation,
    eos: Option<i64>,
    seed: u64,
    device: &dyn TrainDevice,
) -> Result<Vec<Vec<i64>>, ModelError> {
    if prompt.is_empty() {
        return Err(ModelError::BadInput {
            shape: vec![params.num_return_sequences as i64, 0],
            kind: Kind::Int64,
        });
    }
    crate::generate::generate(model, prompt, params, eos, seed, device)
}

/// What `run_<model> --generate` does once its weights are chosen, for any decoder of the
/// zoo: check the model section, load the tokenizer, open the device, turn the prompt into ids
/// (refusing, before anything is allocated, a prompt or a request memory cannot hold), build
/// the network in a CPU var store with `build` (which also loads `weights` into it), move it
/// to the device, decode, and print `Prompt:` and one `Generation:` line per sequence.
#[allow(clippy::too_many_arguments)]
pub fn run_and_print<C, N>(
    std: &run_scripts_template::StandardArgs,
    config: &crate::config::LmConfig<C>,
    model_cfg: &C,
    tokenizer: Option<&std::path::Path>,
    prompt: &str,
    weights: &std::path::Path,
    build: impl FnOnce(&tch::nn::VarStore) -> Result<N, modelzoo_engine::app::RunError>,
) -> Result<(), modelzoo_engine::app::RunError>
where
    C: crate::config::ModelSection,
    N: CausalLm<Error = ModelError>,
{
    use modelzoo_engine::app::RunError;
    model_cfg.validate().map_err(RunError::input)?;
    let tokenizer = crate::Tokenizer::load(tokenizer).map_err(RunError::input)?;
    crate::lm::check_device(std, config)?;
    let device = modelzoo_engine::app::open_device(std)?;
    // Before anything is allocated: an unusable prompt, a length past the model's positions or
    // more sequences than memory holds is bad input (exit 2), never an abort or the OOM killer.
    let request = crate::generate::prompt_ids(
        &tokenizer,
        prompt,
        model_cfg,
        &config.generation,
        &device,
        weights,
    )
    .map_err(RunError::input)?;
    let ids = &request.ids;
    let seed = crate::lm::run_seed(std, config);
    let eos = tokenizer.eos_id().map(i64::from);
    tracing::info!(weights = %weights.display(), seed, device = %device.spec(), "generating");
    let outputs = crate::generate::measured(&request.memory, || {
        RunError::catch_libtorch(format!("during generation on {}", device.spec()), || {
            let mut vs = tch::nn::VarStore::new(tch::Device::Cpu);
            let model = build(&vs)?;
            device.move_var_store(&mut vs).map_err(|e| {
                RunError::failed(format!("cannot move the model to {}: {e}", device.spec()))
            })?;
            generate(&model, ids, &config.generation, eos, seed, &device).map_err(RunError::failed)
        })
    })?;
    println!("Prompt: {prompt}");
    for out in outputs {
        let ids: Vec<u32> = out.iter().filter_map(|&i| u32::try_from(i).ok()).collect();
        let text = tokenizer.decode(&ids).map_err(RunError::failed)?;
        println!("Generation: {prompt}{text}");
    }
    Ok(())
}
