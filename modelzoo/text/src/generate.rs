//! Text generation for any decoder language model of the zoo with a KV cache: greedy search,
//! or sampling with temperature, top-k and top-p; `min_dec_len` holds off end-of-text,
//! `max_dec_len` bounds the output. Sampling draws from a generator seeded per call, so a seed
//! always gives the same text. The network runs on any [`TrainDevice`] (the CPU, CUDA, SDAA);
//! token choice happens on the CPU in fp32, so a device whose fp32 results equal the CPU's
//! yields the CPU's text. `run_gpt` and `run_llama` share this loop; each model only says how
//! one forward step with its cache runs ([`CausalLm`]).

use std::path::Path;

use device_sdaa::{Device, DeviceKind};
use modelzoo_engine::runner::{bytes, bytes_sum, host_available, human_bytes};
use modelzoo_engine::TrainDevice;
use tch::{Kind, Tensor};

use crate::config::{DecodeStrategy, Generation, ModelSection};
use crate::Tokenizer;

/// A `--generate` request that passed [`prompt_ids`]: the prompt's ids and what generating
/// from them holds in memory at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub ids: Vec<i64>,
    pub memory: Estimate,
}

/// The ids of `prompt` for a `--generate` run, refused before anything is allocated when they
/// cannot be generated from: an empty prompt, an id outside the model's vocabulary (the wrong
/// tokenizer for the checkpoint), or a request [`check_request`] refuses. `weights` is the
/// file the weights are read from (its size bounds what reading it holds).
pub fn prompt_ids<M: ModelSection>(
    tokenizer: &Tokenizer,
    prompt: &str,
    model: &M,
    params: &Generation,
    device: &Device,
    weights: &Path,
) -> Result<Request, Box<dyn std::error::Error + Send + Sync>> {
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
    let weights_bytes = std::fs::metadata(weights).map(|m| m.len()).unwrap_or(0);
    let memory = check_request(model, params, ids.len(), weights_bytes, device)?;
    Ok(Request { ids, memory })
}

/// What a generation holds in memory at most, in bytes (saturating: `u64::MAX` means too
/// large to compute, never small).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Where the model runs: the fp32 weights, every layer's KV cache for every sequence at
    /// full length, and the largest forward's activations and logits
    /// ([`ModelSection::forward_values`]) with the logits of the step before; plus the
    /// runtime's own (`runtime_overhead`).
    pub device: u64,
    /// On the host: on the CPU `device` plus the token buffers; on another device the weights
    /// (built on the host) and the token buffers — or, if more, the weights while the
    /// checkpoint is read (twice its file size: the file's bytes and its tensors).
    pub host: u64,
}

/// The [`Estimate`] of generating `params` from a prompt of `prompt_len` tokens with `model`
/// read from a weights file of `weights_bytes`, on the CPU (`on_cpu`) or another device.
pub fn estimate<M: ModelSection>(
    model: &M,
    params: &Generation,
    prompt_len: usize,
    weights_bytes: u64,
    on_cpu: bool,
) -> Estimate {
    let n = params.num_return_sequences as u64;
    let p = prompt_len as u64;
    let m = params.max_dec_len as u64;
    // The last token chosen is never fed back, so the cache holds prompt + max_dec_len - 1.
    let positions = p.saturating_add(m.max(1)) - 1;
    let vocab = model.vocab_size().max(0) as u64;
    let weights = bytes(&[model.parameters(), 4]);
    let cache = |len: u64| bytes(&[n, len, model.kv_values_per_position(), 4]);
    // The prompt's forward; then a decoding step at the longest cache, while the logits of
    // the step before (the prompt's, the largest) are still held.
    let prompt_pass = bytes_sum(&[cache(p), bytes(&[model.forward_values(n, p, 0), 4])]);
    let step = bytes_sum(&[
        cache(positions),
        bytes(&[model.forward_values(n, 1, positions.saturating_sub(1)), 4]),
        bytes(&[n, p, vocab, 4]),
    ]);
    // The prompt repeated per sequence and the next ids (int64).
    let ids = bytes(&[n, p.saturating_add(1), 8]);
    let device = bytes_sum(&[weights, prompt_pass.max(step), ids]);
    // Per sequence on the host: its token list (24 + a malloc header, capacity the next
    // power of two of max_dec_len, 8 bytes a token), the next id twice (a list and a
    // tensor), its done flag; the last logits [n, vocab]; one row's sort and softmax.
    let capacity = m.max(4).checked_next_power_of_two().unwrap_or(u64::MAX);
    let per_sequence = bytes_sum(&[40, bytes(&[capacity, 8]), 17]);
    let host_extra = bytes_sum(&[
        bytes(&[n, per_sequence]),
        bytes(&[n, vocab, 4]),
        bytes(&[vocab, 64]),
    ]);
    let reading = bytes_sum(&[weights, bytes(&[weights_bytes, 2])]);
    let host = if on_cpu {
        bytes_sum(&[device, host_extra]).max(reading)
    } else {
        bytes_sum(&[weights, host_extra]).max(reading)
    };
    let overhead = runtime_overhead();
    Estimate {
        device: bytes_sum(&[device, overhead]),
        host: bytes_sum(&[host, overhead]),
    }
}

/// What running a model costs beyond its tensors: libtorch's code paged in by the first
/// forward, its thread pool's stacks and the allocator's per-thread arenas on the host
/// (measured 20 MiB on 2 threads for the tiny GPT); a device library's workspaces. 64 MiB
/// plus 4 MiB per intra-op thread.
fn runtime_overhead() -> u64 {
    let threads = tch::get_num_threads().max(1) as u64;
    bytes_sum(&[64 << 20, bytes(&[threads, 4 << 20])])
}

/// Refuses, before anything is allocated, a generation that cannot run: a prompt plus
/// `max_dec_len` longer than the model's positions (it would fail after decoding up to
/// there), or one whose [`estimate`] — an upper bound — exceeds what the host has available
/// (`MemAvailable`, or the cgroup's limit) or, off the CPU, the device's free memory (an
/// allocation abort or the kernel's OOM killer otherwise). `device` is where the model runs.
/// Returns the estimate.
pub fn check_request<M: ModelSection>(
    model: &M,
    params: &Generation,
    prompt_len: usize,
    weights_bytes: u64,
    device: &Device,
) -> Result<Estimate, String> {
    let on_cpu = device.kind() == DeviceKind::Cpu;
    let max = model.max_position_embeddings().max(0) as u64;
    let p = prompt_len as u64;
    let m = params.max_dec_len as u64;
    if p > max {
        return Err(format!(
            "the prompt is {p} tokens, more than the model's {max} positions (Model.max_position_embeddings); shorten it"
        ));
    }
    let positions = p.saturating_add(m.max(1)) - 1;
    if positions > max {
        return Err(format!(
            "the prompt ({p} tokens) plus Generation.max_dec_len ({m}) needs {positions} positions, more than the model's {max} (Model.max_position_embeddings); lower max_dec_len to {} (-o Generation.max_dec_len={}) or shorten the prompt",
            max - p + 1,
            max - p + 1
        ));
    }
    let memory = estimate(model, params, prompt_len, weights_bytes, on_cpu);
    let mut checks: Vec<(u64, String, u64, String)> = Vec::new();
    if let Some((avail, source)) = host_available() {
        checks.push((memory.host, "host memory".into(), avail, source.to_string()));
    }
    if !on_cpu {
        if let Some((free, total)) = TrainDevice::memory_info(device) {
            checks.push((
                memory.device,
                format!("{} memory", device.label()),
                free,
                format!("free of {} on the device", human_bytes(total)),
            ));
        }
    }
    let n = params.num_return_sequences;
    for (need, place, avail, source) in checks {
        if need > avail {
            return Err(format!(
                "Generation.num_return_sequences {n} of {positions} positions (prompt {p} + max_dec_len {m}): generating needs up to {} of {place} (estimated: the fp32 weights, every layer's KV cache for every sequence at full length, the largest forward's activations and logits, the token buffers), but {} is available ({source}); lower num_return_sequences or max_dec_len",
                human_bytes(need),
                human_bytes(avail)
            ));
        }
    }
    Ok(memory)
}

/// Runs `generation` (reading the weights and decoding) so that its memory can be held
/// against `memory`: the allocator gives freed blocks back to the system (undoing
/// `app::keep_freed_memory`, which suits training's same-sized buffers step after step; a
/// growing KV cache would leave each step's freed cache behind as holes the next, larger one
/// cannot use), and the host's peak resident growth is logged with the estimate
/// (`RUST_LOG=info`).
pub fn measured<T>(memory: &Estimate, generation: impl FnOnce() -> T) -> T {
    return_freed_memory();
    let start = reset_peak_resident();
    let out = generation();
    if let (Some(start), Some(peak)) = (start, status_kib("VmHWM:")) {
        let grown = peak.saturating_sub(start);
        tracing::info!(
            "host memory: peak resident grew by {grown} bytes ({}); estimated at most {} bytes ({})",
            human_bytes(grown),
            memory.host,
            human_bytes(memory.host)
        );
    }
    out
}

/// A field of /proc/self/status in bytes (`VmRSS:`, `VmHWM:`).
fn status_kib(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

/// Resets the peak resident size (VmHWM) to the current one; returns that, or `None` where
/// the peak cannot be reset (it would count what came before).
fn reset_peak_resident() -> Option<u64> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    status_kib("VmRSS:")
}

/// glibc hands large freed blocks back to the kernel again: blocks of 256 KiB and more are
/// mapped on their own (unmapped when freed, a fixed threshold glibc does not raise), and the
/// heap's free top is trimmed. Left alone when the user tunes malloc (`GLIBC_TUNABLES`,
/// `MALLOC_*_`), as `app::keep_freed_memory` does.
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let user_tuned = std::env::vars_os().any(|(k, _)| {
            let k = k.to_string_lossy();
            k == "GLIBC_TUNABLES" || (k.starts_with("MALLOC_") && k.ends_with('_'))
        });
        if user_tuned {
            return;
        }
        extern "C" {
            fn mallopt(
                param: std::os::raw::c_int,
                value: std::os::raw::c_int,
            ) -> std::os::raw::c_int;
        }
        // glibc's <malloc.h>.
        const M_TRIM_THRESHOLD: std::os::raw::c_int = -1;
        const M_MMAP_THRESHOLD: std::os::raw::c_int = -3;
        const M_MMAP_MAX: std::os::raw::c_int = -4;
        // SAFETY: mallopt only changes allocator parameters (it takes malloc's own locks).
        unsafe {
            mallopt(M_MMAP_MAX, 65536);
            mallopt(M_MMAP_THRESHOLD, 256 * 1024);
            mallopt(M_TRIM_THRESHOLD, 256 * 1024);
        }
    }
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
        let mut last = device.to_cpu(&logits.select(1, -1)).to_kind(Kind::Float);
        if let Some(e) = eos.filter(|&e| e < vocab && step < params.min_dec_len) {
            let _ = last.select(1, e).fill_(f64::NEG_INFINITY);
        }
        // Every row at once for greedy search (one argmax, not one per sequence).
        let next: Vec<i64> = match params.decode_strategy {
            DecodeStrategy::GreedySearch => {
                Vec::<i64>::try_from(last.argmax(1, false)).expect("argmax gives int64 ids")
            }
            DecodeStrategy::Sampling => {
                last /= params.temperature;
                (0..n)
                    .map(|row| sample(&last.get(row), params.top_k, params.top_p, rng.next_f64()))
                    .collect()
            }
        };
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
