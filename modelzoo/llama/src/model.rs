//! LLaMA in tch, as Hugging Face's `LlamaForCausalLM` computes it: RMSNorm (in fp32),
//! rotary position embeddings (the `rotate_half` convention, `rope_theta`), grouped-query
//! causal attention through libtorch's `scaled_dot_product_attention`, a SwiGLU MLP, optional
//! tied input/output embeddings, no biases; a KV cache for incremental decoding; optional
//! activation recompute of each decoder layer (`device_sdaa::recompute`). Variable names are
//! exactly Hugging Face's (`model.layers.0.self_attn.q_proj.weight`, ...), so its state dicts
//! load by name (`crate::pretrained`).

use device_sdaa::capture;
use tch::nn::{self, Init};
use tch::{Kind, Tensor};

use crate::config::Model as ModelConfig;
use modelzoo_text::decoder::{cached_kv, recomputed, Input};
pub use modelzoo_text::decoder::{KvCache, ModelError};

/// The shapes a decoder layer computes with (copied into recompute callbacks).
#[derive(Debug, Clone, Copy)]
struct Dims {
    hidden: i64,
    heads: i64,
    kv_heads: i64,
    head_dim: i64,
    eps: f64,
    attn_dropout: f64,
}

/// One decoder layer's weights (Hugging Face names in comments) and dump scopes.
#[derive(Debug)]
struct Layer {
    /// `model.layers.{i}`: the dump scope prefix.
    name: String,
    input_layernorm: Tensor,
    q_proj: Tensor,
    k_proj: Tensor,
    v_proj: Tensor,
    o_proj: Tensor,
    post_attention_layernorm: Tensor,
    gate_proj: Tensor,
    up_proj: Tensor,
    down_proj: Tensor,
}

impl Layer {
    /// Handles to the same variables, for a recompute callback that outlives this call.
    fn shallow(&self) -> Layer {
        Layer {
            name: self.name.clone(),
            input_layernorm: self.input_layernorm.shallow_clone(),
            q_proj: self.q_proj.shallow_clone(),
            k_proj: self.k_proj.shallow_clone(),
            v_proj: self.v_proj.shallow_clone(),
            o_proj: self.o_proj.shallow_clone(),
            post_attention_layernorm: self.post_attention_layernorm.shallow_clone(),
            gate_proj: self.gate_proj.shallow_clone(),
            up_proj: self.up_proj.shallow_clone(),
            down_proj: self.down_proj.shallow_clone(),
        }
    }

    /// `x + attn(norm(x))`, then `+ mlp(norm(..))`. `cos`/`sin` `[1, 1, t, head_dim]`; with a
    /// cache slot the new keys/values are appended to it; `mask` offsets causality by the
    /// cached positions (`None`: causal from position 0, or one new position).
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &self,
        d: &Dims,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        cache: Option<&mut Option<(Tensor, Tensor)>>,
        mask: Option<&Tensor>,
        causal: bool,
        train: bool,
    ) -> Tensor {
        let size = x.size();
        let (b, t) = (size[0], size[1]);
        let n = &self.name;
        let h = capture::module(&format!("{n}.input_layernorm"), x, || {
            rms_norm(x, &self.input_layernorm, d.eps)
        });
        let attn = capture::module(&format!("{n}.self_attn"), &h, || {
            let heads_of = |w: &Tensor, heads: i64| {
                h.linear::<&Tensor>(w, None)
                    .view([b, t, heads, d.head_dim])
                    .transpose(1, 2)
            };
            let q = rope(&heads_of(&self.q_proj, d.heads), cos, sin);
            let (k, v) = cached_kv(
                cache,
                rope(&heads_of(&self.k_proj, d.kv_heads), cos, sin),
                heads_of(&self.v_proj, d.kv_heads),
            );
            let (k, v) = (
                repeat_kv(&k, d.heads / d.kv_heads),
                repeat_kv(&v, d.heads / d.kv_heads),
            );
            let p = if train { d.attn_dropout } else { 0.0 };
            let y = Tensor::scaled_dot_product_attention(&q, &k, &v, mask, p, causal, None, false);
            y.transpose(1, 2)
                .contiguous()
                .view([b, t, d.hidden])
                .linear::<&Tensor>(&self.o_proj, None)
        });
        let x = x + attn;
        let h = capture::module(&format!("{n}.post_attention_layernorm"), &x, || {
            rms_norm(&x, &self.post_attention_layernorm, d.eps)
        });
        let m = capture::module(&format!("{n}.mlp"), &h, || {
            let gate = h.linear::<&Tensor>(&self.gate_proj, None).silu();
            (gate * h.linear::<&Tensor>(&self.up_proj, None))
                .linear::<&Tensor>(&self.down_proj, None)
        });
        x + m
    }
}

/// Hugging Face `LlamaRMSNorm`: normalise in fp32, cast back, then scale.
fn rms_norm(x: &Tensor, weight: &Tensor, eps: f64) -> Tensor {
    let kind = x.kind();
    let h = x.to_kind(Kind::Float);
    let var = h.pow_tensor_scalar(2).mean_dim(-1, true, Kind::Float);
    let h = h * (var + eps).rsqrt();
    weight * h.to_kind(kind)
}

/// `x·cos + rotate_half(x)·sin`, `rotate_half(x) = cat(-x[.., d/2:], x[.., :d/2])`.
fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Tensor {
    let half = x.size()[3] / 2;
    let x1 = x.narrow(3, 0, half);
    let x2 = x.narrow(3, half, half);
    let rotated = Tensor::cat(&[-x2, x1], 3);
    x * cos + rotated * sin
}

/// Hugging Face `repeat_kv`: key/value head j serves query heads j·n_rep .. (j+1)·n_rep.
fn repeat_kv(x: &Tensor, n_rep: i64) -> Tensor {
    if n_rep == 1 {
        return x.shallow_clone();
    }
    let s = x.size();
    x.unsqueeze(2)
        .expand([s[0], s[1], n_rep, s[2], s[3]], false)
        .reshape([s[0], s[1] * n_rep, s[2], s[3]])
}

/// The LLaMA network. Build it in a CPU `VarStore`, then move the store to the device.
#[derive(Debug)]
pub struct Llama {
    config: ModelConfig,
    dims: Dims,
    embed_tokens: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    /// `None` when tied to `embed_tokens`.
    lm_head: Option<Tensor>,
    /// Rotary inverse frequencies `[head_dim / 2]`, on the CPU in fp32, as Hugging Face
    /// computes them: `1 / theta^(arange(0, d, 2) / d)`.
    inv_freq: Tensor,
    recompute: bool,
}

impl Llama {
    /// Creates the variables under `p` (Hugging Face `LlamaForCausalLM` names) with its
    /// initialisation: N(0, initializer_range) for every projection and the embeddings, unit
    /// RMSNorm scales. The config must have passed [`ModelConfig::validate`].
    pub fn new(p: &nn::Path, config: &ModelConfig) -> Llama {
        let (h, f) = (config.hidden_size, config.ffn_hidden_size);
        let hd = config.head_dim();
        let (heads, kv) = (config.num_attention_heads, config.kv_heads());
        let init = Init::Randn {
            mean: 0.0,
            stdev: config.initializer_range,
        };
        let m = p / "model";
        let w = |path: nn::Path, dims: &[i64]| path.var("weight", dims, init);
        let ones = |path: nn::Path, n: i64| path.var("weight", &[n], Init::Const(1.0));
        let embed_tokens = w(&m / "embed_tokens", &[config.vocab_size, h]);
        let layers = (0..config.num_layers)
            .map(|i| {
                let l = &m / "layers" / i;
                let a = &l / "self_attn";
                let mlp = &l / "mlp";
                Layer {
                    name: format!("model.layers.{i}"),
                    input_layernorm: ones(&l / "input_layernorm", h),
                    q_proj: w(&a / "q_proj", &[heads * hd, h]),
                    k_proj: w(&a / "k_proj", &[kv * hd, h]),
                    v_proj: w(&a / "v_proj", &[kv * hd, h]),
                    o_proj: w(&a / "o_proj", &[h, heads * hd]),
                    post_attention_layernorm: ones(&l / "post_attention_layernorm", h),
                    gate_proj: w(&mlp / "gate_proj", &[f, h]),
                    up_proj: w(&mlp / "up_proj", &[f, h]),
                    down_proj: w(&mlp / "down_proj", &[h, f]),
                }
            })
            .collect();
        let norm = ones(&m / "norm", h);
        let lm_head =
            (!config.tie_word_embeddings).then(|| w(p / "lm_head", &[config.vocab_size, h]));
        let exponents = Tensor::arange_start_step(0, hd, 2, (Kind::Int64, tch::Device::Cpu))
            .to_kind(Kind::Float)
            / hd as f64;
        let inv_freq = Tensor::scalar_tensor(config.rope_theta, (Kind::Float, tch::Device::Cpu))
            .pow(&exponents)
            .reciprocal();
        Llama {
            dims: Dims {
                hidden: h,
                heads,
                kv_heads: kv,
                head_dim: hd,
                eps: config.rms_norm_eps,
                attn_dropout: config.attention_probs_dropout_prob,
            },
            config: config.clone(),
            embed_tokens,
            layers,
            norm,
            lm_head,
            inv_freq,
            recompute: config.use_recompute,
        }
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Turns activation recompute of the decoder layers on or off (the config's
    /// `use_recompute` is the default). Only training forwards that need gradients recompute.
    pub fn set_recompute(&mut self, on: bool) {
        self.recompute = on;
    }

    /// The output projection's weight (the embedding when tied).
    fn lm_head_weight(&self) -> &Tensor {
        self.lm_head.as_ref().unwrap_or(&self.embed_tokens)
    }

    /// Rotary `cos`, `sin` `[1, 1, t, head_dim]` for positions `past .. past + t`, computed
    /// on the device of `ids` in fp32 and cast to `kind` (Hugging Face's
    /// `LlamaRotaryEmbedding`, attention_scaling 1).
    fn rotary(&self, ids: &Tensor, past: i64, kind: Kind) -> (Tensor, Tensor) {
        // Built from device tensors: `tch::Device` cannot name SDAA (PrivateUse1).
        let positions = ids
            .select(0, 0)
            .ones_like()
            .to_kind(Kind::Float)
            .cumsum(0, Kind::Float)
            + (past - 1) as f64;
        let half = self.dims.head_dim / 2;
        let mut inv = self.norm.narrow(0, 0, half).detach().zeros_like();
        tch::no_grad(|| inv.copy_(&self.inv_freq));
        let freqs = positions.unsqueeze(1) * inv.unsqueeze(0);
        let emb = Tensor::cat(&[&freqs, &freqs], 1).unsqueeze(0).unsqueeze(0);
        (emb.cos().to_kind(kind), emb.sin().to_kind(kind))
    }

    /// Logits `[batch, seq, vocab]` for `ids` `[batch, seq]`. With a cache, `ids` continue the
    /// cached positions and their keys/values are appended. `train` enables attention dropout
    /// and, with recompute on and gradients needed, recomputes each layer in backward.
    pub fn forward(
        &self,
        ids: &Tensor,
        mut cache: Option<&mut KvCache>,
        train: bool,
    ) -> Result<Tensor, ModelError> {
        let input = Input::check(
            ids,
            cache.as_deref_mut(),
            self.layers.len(),
            self.config.max_position_embeddings,
            false,
        )?;
        let (past, t) = (input.past, input.len);
        let mut x = capture::module("model.embed_tokens", ids, || {
            Tensor::embedding(&self.embed_tokens, ids, -1, false, false)
        });
        let (cos, sin) = self.rotary(ids, past, x.kind());
        let mask = input.offset_mask(ids);
        let causal = past == 0 && t > 1;
        let d = self.dims;
        for (i, layer) in self.layers.iter().enumerate() {
            let _scope = capture::scope(&layer.name);
            let slot = cache.as_mut().map(|c| c.slot(i));
            x = if self.recompute && train && slot.is_none() && x.requires_grad() {
                let l = layer.shallow();
                // Dropout draws random numbers: the rerun must draw the same ones.
                let preserve_rng = d.attn_dropout > 0.0;
                recomputed(&[&x, &cos, &sin], preserve_rng, move |io| {
                    l.forward(&d, &io[0], &io[1], &io[2], None, None, causal, true)
                })?
            } else {
                layer.forward(&d, &x, &cos, &sin, slot, mask.as_ref(), causal, train)
            };
        }
        let x = capture::module("model.norm", &x, || rms_norm(&x, &self.norm, d.eps));
        Ok(capture::module("lm_head", &x, || {
            x.linear::<&Tensor>(self.lm_head_weight(), None)
        }))
    }

    /// Mean next-token cross entropy of `logits` `[b, t, v]` against `labels` `[b, t]`, in fp32.
    pub fn loss(logits: &Tensor, labels: &Tensor) -> Tensor {
        modelzoo_text::lm::next_token_loss(logits, labels)
    }

    /// Parameters, counting a tied embedding once.
    pub fn num_params(&self) -> u64 {
        self.config.num_params()
    }

    /// Training FLOPs per token at sequence length `seq`: 6·N for the matmuls of forward and
    /// backward (N without the input embedding table, a lookup — unless it is tied, when it is
    /// the output projection's matmul) plus 12·L·h·seq for attention (the PaLM / nanoGPT MFU
    /// formula). Recompute's extra forward is not counted: MFU measures useful work.
    pub fn train_flops_per_token(&self, seq: i64) -> f64 {
        let c = &self.config;
        let lookup = if c.tie_word_embeddings {
            0
        } else {
            (c.vocab_size * c.hidden_size) as u64
        };
        let n = self.num_params().saturating_sub(lookup) as f64;
        6.0 * n + 12.0 * (c.num_layers * c.hidden_size * seq) as f64
    }
}
