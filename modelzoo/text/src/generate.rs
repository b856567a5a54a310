//! Text generation for any decoder language model of the zoo with a KV cache: greedy search,
//! or sampling with temperature, top-k and top-p; `min_dec_len` holds off end-of-text,
//! `max_dec_len` bounds the output. Sampling draws from a generator seeded per call, so a seed
//! always gives the same text. The network runs on any [`TrainDevice`] (the CPU, CUDA, SDAA);
//! token choice happens on the CPU in fp32, so a device whose fp32 results equal the CPU's
//! yields the CPU's text. `run_gpt` and `run_llama` share this loop; each model only says how
//! one forward step with its cache runs ([`CausalLm`]).

use device_sdaa::{Device, DeviceKind};
use modelzoo_engine::runner::{bytes, bytes_sum, host_available, human_bytes};
use modelzoo_engine::TrainDevice;
use tch::{Kind, Tensor};

use crate::config::{DecodeStrategy, Generation, ModelSection};
use crate::Tokenizer;

/// The ids of `prompt` for a `--generate` run, refused before anything is allocated when they
/// cannot be generated from: an empty prompt, an id outside the model's vocabulary (the wrong
/// tokenizer for the checkpoint), or a request [`check_request`] refuses.
pub fn prompt_ids<M: ModelSection>(
    tokenizer: &Tokenizer,
    prompt: &str,
    model: &M,
    params: &Generation,
    device: &Device,
) -> Result<Vec<i64>, Box<dyn std::error::Error + Send + Sync>> {
    let ids: Vec<i64> = tokenizer
        .encode(prompt)?
        .into_iter()
        .map(i64::from)
        .collect();
    if ids.is_empty() {
        return Err("--prompt is empty after tokenization; give some text to continue".into());
    }
    let vocab = model.vocab_size();
    if let Some(&bad) = ids.iter().find(|&&i| i >= vocab) {
        return Err(format!(
            "the prompt encodes to id {bad}, outside the model vocabulary ({vocab}): wrong tokenizer for this checkpoint?"
        )
        .into());
    }
    check_request(model, params, ids.len(), device)?;
    Ok(ids)
}

/// Refuses, before anything is allocated, a generation that cannot run: a prompt plus
/// `max_dec_len` longer than the model's positions (it would fail after decoding up to
/// there), or `num_return_sequences` sequences of that length that cannot fit in memory (an
/// allocation abort or the kernel's OOM killer otherwise). `device` is where the model runs
/// (on the CPU, the host holds everything). The memory is a lower bound: fp32 weights (generation
/// runs in the checkpoint's fp32, built on the host first), every sequence's KV cache at full
/// length, the prompt pass's logits, and on the host each sequence's last logits and tokens.
pub fn check_request<M: ModelSection>(
    model: &M,
    params: &Generation,
    prompt_len: usize,
    device: &Device,
) -> Result<(), String> {
    let on_cpu = device.kind() == DeviceKind::Cpu;
    let max = model.max_position_embeddings().max(0) as u64;
    let p = prompt_len as u64;
    let m = params.max_dec_len as u64;
    if p > max {
        return Err(format!(
            "the prompt is {p} tokens, more than the model's {max} positions (Model.max_position_embeddings); shorten it"
        ));
    }
    // The last token chosen is never fed back, so the cache holds prompt + max_dec_len - 1.
    let positions = p.saturating_add(m.max(1)) - 1;
    if positions > max {
        return Err(format!(
            "the prompt ({p} tokens) plus Generation.max_dec_len ({m}) needs {positions} positions, more than the model's {max} (Model.max_position_embeddings); lower max_dec_len to {} (-o Generation.max_dec_len={}) or shorten the prompt",
            max - p + 1,
            max - p + 1
        ));
    }
    let n = params.num_return_sequences as u64;
    let vocab = model.vocab_size().max(0) as u64;
    let weights = bytes(&[model.parameters(), 4]);
    let on_device = bytes_sum(&[
        weights,
        bytes(&[n, positions, model.kv_values_per_position(), 4]),
        bytes(&[n, p, vocab, 4]),
    ]);
    // Per sequence on the host: its token list (24 + 8 per token), its last logits, the
    // next id and its done flag.
    let per_sequence = bytes_sum(&[24, bytes(&[m, 8]), bytes(&[vocab, 4]), 9]);
    let host_extra = bytes(&[n, per_sequence]);
    let mut checks: Vec<(u64, String, u64, String)> = Vec::new();
    if let Some((avail, source)) = host_available() {
        let need = if on_cpu {
            bytes_sum(&[on_device, host_extra])
        } else {
            bytes_sum(&[weights, host_extra])
        };
        checks.push((need, "host memory".into(), avail, source.to_string()));
    }
    if !on_cpu {
        if let Some((free, total)) = TrainDevice::memory_info(device) {
            checks.push((
                on_device,
                format!("{} memory", device.label()),
                free,
                format!("free of {} on the device", human_bytes(total)),
            ));
        }
    }
    for (need, place, avail, source) in checks {
        if need > avail {
            return Err(format!(
                "Generation.num_return_sequences {n} of {positions} positions (prompt {p} + max_dec_len {m}): generating needs {} of {place} (fp32 weights, each sequence's KV cache and logits), but {} is available ({source}); lower num_return_sequences or max_dec_len",
                if need == u64::MAX {
                    human_bytes(need)
                } else {
                    format!("at least {}", human_bytes(need))
                },
                human_bytes(avail)
            ));
        }
    }
    Ok(())
}

/// A decoder that continues token ids from a cache of what it has seen.
pub trait CausalLm {
    /// The per-layer keys and values of the positions seen so far (empty when new).
    type Cache: Default;
    /// Why a step cannot run (input too long for the model's positions, ...).
    type Error;
    /// Logits rows are `[.., vocab_size]`.
    fn vocab_size(&self) -> i64;
    /// Logits `[batch, seq, vocab]` for `ids` `[batch, seq]`, which continue the positions in
    /// `cache`; their keys and values are appended to it. Eval mode (no dropout).
    fn forward_cached(&self, ids: &Tensor, cache: &mut Self::Cache) -> Result<Tensor, Self::Error>;
}

/// Generated continuations (prompt excluded) of a non-empty `prompt`,
/// `num_return_sequences` of them. `eos` ends a sequence (it is not included); `device` is
/// where the model's variables live (`&tch::Device::Cpu` for a CPU model, a
/// `device_sdaa::Device` after `move_var_store`).
pub fn generate<M: CausalLm>(
    model: &M,
    prompt: &[i64],
    params: &Generation,
    eos: Option<i64>,
    seed: u64,
    device: &dyn TrainDevice,
) -> Result<Vec<Vec<i64>>, M::Error> {
    let n = params.num_return_sequences as i64;
    let vocab = model.vocab_size();
    let _guard = tch::no_grad_guard();
    let mut out: Vec<Vec<i64>> = vec![Vec::new(); n as usize];
    let mut done = vec![false; n as usize];
    let mut cache = M::Cache::default();
    let ids = device.to_device(&Tensor::from_slice(prompt).view([1, -1]).repeat([n, 1]));
    let mut logits = model.forward_cached(&ids, &mut cache)?;
    // A private generator: sampling neither depends on nor disturbs libtorch's global RNG.
    let mut rng = SplitMix(seed);
    for step in 0..params.max_dec_len {
        // Last position's logits, on the CPU in fp32.
        let last = device.to_cpu(&logits.select(1, -1)).to_kind(Kind::Float);
        let mut next = Vec::with_capacity(n as usize);
        for row in 0..n {
            let mut l = last.get(row);
            if let Some(e) = eos.filter(|&e| e < vocab && step < params.min_dec_len) {
                let _ = l.get(e).fill_(f64::NEG_INFINITY);
            }
            let token = match params.decode_strategy {
                DecodeStrategy::GreedySearch => l.argmax(0, false).int64_value(&[]),
                DecodeStrategy::Sampling => {
                    l /= params.temperature;
                    sample(&l, params.top_k, params.top_p, rng.next_f64())
                }
            };
            next.push(token);
        }
        for (i, &t) in next.iter().enumerate() {
            if done[i] {
                continue;
            }
            if Some(t) == eos {
                done[i] = true;
            } else {
                out[i].push(t);
            }
        }
        if done.iter().all(|d| *d) || step + 1 == params.max_dec_len {
            break;
        }
        let input = device.to_device(&Tensor::from_slice(&next).view([n, 1]));
        logits = model.forward_cached(&input, &mut cache)?;
    }
    Ok(out)
}

/// Draws a token from `logits` `[vocab]` after top-k and top-p filtering, by inverting the
/// cumulative distribution at `u` ∈ [0, 1). Public so a model can decode its own way with the
/// zoo's filtering.
pub fn sample(logits: &Tensor, top_k: i64, top_p: f64, u: f64) -> i64 {
    let (sorted, order) = logits.sort(0, true);
    let mut probs: Vec<f64> = Vec::<f32>::try_from(sorted.softmax(0, Kind::Float))
        .unwrap_or_default()
        .into_iter()
        .map(f64::from)
        .collect();
    let order: Vec<i64> = Vec::<i64>::try_from(order).unwrap_or_default();
    let mut keep = probs.len();
    if top_k > 0 {
        keep = keep.min(top_k as usize);
    }
    if top_p < 1.0 {
        let mut acc = 0.0;
        for (i, p) in probs.iter().enumerate().take(keep) {
            acc += p;
            if acc >= top_p {
                keep = i + 1;
                break;
            }
        }
    }
    probs.truncate(keep.max(1));
    let total: f64 = probs.iter().sum();
    let target = u * total;
    let mut acc = 0.0;
    for (i, p) in probs.iter().enumerate() {
        acc += p;
        if target < acc {
            return order[i];
        }
    }
    order[probs.len() - 1]
}

/// splitmix64: a tiny seeded generator whose stream is fixed forever (no crate version can
/// change the text a seed produces).
struct SplitMix(u64);

impl SplitMix {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_one_is_argmax_and_top_p_cuts_tail() {
        let l = Tensor::from_slice(&[0.1f32, 3.0, 1.0, 2.0]);
        for u in [0.0, 0.5, 0.999] {
            assert_eq!(sample(&l, 1, 1.0, u), 1);
        }
        // softmax ≈ [0.03, 0.64, 0.09, 0.24]: top_p 0.8 keeps {1, 3}.
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..100 {
            seen.insert(sample(&l, 0, 0.8, i as f64 / 100.0));
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![1, 3]);
        // No filter: every token can come out.
        let mut all = std::collections::BTreeSet::new();
        for i in 0..1000 {
            all.insert(sample(&l, 0, 1.0, i as f64 / 1000.0));
        }
        assert_eq!(all.len(), 4);
    }
}
