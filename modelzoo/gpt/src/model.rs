//! Pre-LayerNorm GPT-2 in tch: learned positions, causal attention through libtorch's
//! `scaled_dot_product_attention`, GELU MLP, tied input/output embeddings, and a KV cache for
//! incremental decoding. Variable names follow Hugging Face GPT-2 (`wte`, `h.0.attn.c_attn`,
//! ...), so checkpoints read like the ones people know.

use device_sdaa::capture;
use tch::nn::{self, Init, Module};
use tch::{Kind, Tensor};

use crate::config::Model as ModelConfig;
use modelzoo_text::decoder::{cached_kv, recomputed, Input};
pub use modelzoo_text::decoder::{KvCache, ModelError};

/// The dump scopes of a block's modules (`h.0`, `h.0.ln_1`, `h.0.attn`, ...).
#[derive(Debug, Clone)]
struct BlockNames {
    block: String,
    ln_1: String,
    attn: String,
    ln_2: String,
    mlp: String,
}

#[derive(Debug)]
struct Block {
    names: BlockNames,
    ln_1: Ln,
    c_attn: nn::Linear,
    attn_proj: nn::Linear,
    ln_2: Ln,
    c_fc: nn::Linear,
    mlp_proj: nn::Linear,
}

/// A LayerNorm over the last dimension with weight and bias: `nn::LayerNorm`'s variables and
/// computation (eps 1e-5), as plain handles so a block can be copied into a recompute
/// callback.
#[derive(Debug)]
struct Ln {
    ws: Tensor,
    bs: Tensor,
}

impl Ln {
    fn new(p: nn::Path, h: i64) -> Ln {
        let ln = layer_norm(p, h);
        match (ln.ws, ln.bs) {
            (Some(ws), Some(bs)) => Ln { ws, bs },
            _ => unreachable!("layer_norm with elementwise_affine has weight and bias"),
        }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let h = self.ws.size();
        Tensor::layer_norm(x, &h, Some(&self.ws), Some(&self.bs), 1e-5, true)
    }

    fn shallow(&self) -> Ln {
        Ln {
            ws: self.ws.shallow_clone(),
            bs: self.bs.shallow_clone(),
        }
    }
}

fn shallow_linear(l: &nn::Linear) -> nn::Linear {
    nn::Linear {
        ws: l.ws.shallow_clone(),
        bs: l.bs.as_ref().map(Tensor::shallow_clone),
    }
}

/// What a block computes with besides its weights (copied into recompute callbacks).
#[derive(Debug, Clone, Copy)]
struct BlockDims {
    hidden: i64,
    heads: i64,
    dropout: f64,
    attn_dropout: f64,
}

impl Block {
    /// Handles to the same variables, for a recompute callback that outlives the forward.
    fn shallow(&self) -> Block {
        Block {
            names: self.names.clone(),
            ln_1: self.ln_1.shallow(),
            c_attn: shallow_linear(&self.c_attn),
            attn_proj: shallow_linear(&self.attn_proj),
            ln_2: self.ln_2.shallow(),
            c_fc: shallow_linear(&self.c_fc),
            mlp_proj: shallow_linear(&self.mlp_proj),
        }
    }

    /// `x + attn(ln_1(x))`, then `+ mlp(ln_2(..))`. With a cache slot the new keys/values are
    /// appended; `mask` offsets causality by `past` cached positions.
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &self,
        d: &BlockDims,
        x: &Tensor,
        cache: Option<&mut Option<(Tensor, Tensor)>>,
        mask: Option<&Tensor>,
        past: i64,
        train: bool,
    ) -> Tensor {
        let size = x.size();
        let (b, t) = (size[0], size[1]);
        let (heads, hd) = (d.heads, d.hidden / d.heads);
        let names = &self.names;
        let _block = capture::scope(&names.block);
        let h = capture::module(&names.ln_1, x, || self.ln_1.forward(x));
        let y = capture::module(&names.attn, &h, || {
            let qkv = self.c_attn.forward(&h);
            let split = qkv.split(d.hidden, 2);
            let heads_of = |t_: &Tensor| t_.view([b, t, heads, hd]).transpose(1, 2);
            let q = heads_of(&split[0]);
            let (k, v) = cached_kv(cache, heads_of(&split[1]), heads_of(&split[2]));
            let y = Tensor::scaled_dot_product_attention(
                &q,
                &k,
                &v,
                mask,
                d.attn_dropout,
                past == 0,
                None,
                false,
            );
            let y = y.transpose(1, 2).contiguous().view([b, t, d.hidden]);
            self.attn_proj.forward(&y).dropout(d.dropout, train)
        });
        let x = x.g_add(&y);
        let h = capture::module(&names.ln_2, &x, || self.ln_2.forward(&x));
        let m = capture::module(&names.mlp, &h, || {
            self.c_fc
                .forward(&h)
                .gelu("tanh")
                .apply(&self.mlp_proj)
                .dropout(d.dropout, train)
        });
        x.g_add(&m)
    }
}

/// The GPT network. Build it in a CPU `VarStore`, then move the store to the device.
#[derive(Debug)]
pub struct Gpt {
    config: ModelConfig,
    wte: nn::Embedding,
    wpe: nn::Embedding,
    blocks: Vec<Block>,
    ln_f: nn::LayerNorm,
    /// Recompute each block's activations in backward (`Model.use_recompute`).
    recompute: bool,
}

fn normal(stdev: f64) -> Init {
    Init::Randn { mean: 0.0, stdev }
}

fn linear(p: nn::Path, i: i64, o: i64, stdev: f64) -> nn::Linear {
    nn::linear(
        p,
        i,
        o,
        nn::LinearConfig {
            ws_init: normal(stdev),
            bs_init: Some(Init::Const(0.0)),
            bias: true,
        },
    )
}

fn layer_norm(p: nn::Path, h: i64) -> nn::LayerNorm {
    nn::layer_norm(
        p,
        vec![h],
        nn::LayerNormConfig {
            eps: 1e-5,
            ..Default::default()
        },
    )
}

impl Gpt {
    /// Creates the variables under `p` with GPT-2 initialisation: N(0, initializer_range) for
    /// weights and embeddings, N(0, initializer_range / sqrt(2 · num_layers)) for the two
    /// residual projections of each block, zero biases, unit LayerNorm scales. The config
    /// must have passed [`ModelConfig::validate`].
    pub fn new(p: &nn::Path, config: &ModelConfig) -> Gpt {
        let h = config.hidden_size;
        let std = config.initializer_range;
        let resid_std = std / (2.0 * config.num_layers as f64).sqrt();
        let emb = |name: &str, n: i64| {
            nn::embedding(
                p / name,
                n,
                h,
                nn::EmbeddingConfig {
                    ws_init: normal(std),
                    ..Default::default()
                },
            )
        };
        let wte = emb("wte", config.vocab_size);
        let wpe = emb("wpe", config.max_position_embeddings);
        let blocks = (0..config.num_layers)
            .map(|i| {
                let b = p / "h" / i;
                Block {
                    names: BlockNames {
                        block: format!("h.{i}"),
                        ln_1: format!("h.{i}.ln_1"),
                        attn: format!("h.{i}.attn"),
                        ln_2: format!("h.{i}.ln_2"),
                        mlp: format!("h.{i}.mlp"),
                    },
                    ln_1: Ln::new(&b / "ln_1", h),
                    c_attn: linear(&b / "attn" / "c_attn", h, 3 * h, std),
                    attn_proj: linear(&b / "attn" / "c_proj", h, h, resid_std),
                    ln_2: Ln::new(&b / "ln_2", h),
                    c_fc: linear(&b / "mlp" / "c_fc", h, config.ffn_hidden(), std),
                    mlp_proj: linear(&b / "mlp" / "c_proj", config.ffn_hidden(), h, resid_std),
                }
            })
            .collect();
        let ln_f = layer_norm(p / "ln_f", h);
        Gpt {
            config: config.clone(),
            wte,
            wpe,
            blocks,
            ln_f,
            recompute: config.use_recompute,
        }
    }

    /// Turns activation recompute of the blocks on or off (the config's `use_recompute` is
    /// the default). Only training forwards that need gradients recompute.
    pub fn set_recompute(&mut self, on: bool) {
        self.recompute = on;
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Logits `[batch, seq, vocab]` for `ids` `[batch, seq]`. With a cache, `ids` continue the
    /// cached positions and their keys/values are appended. `train` enables dropout.
    pub fn forward(
        &self,
        ids: &Tensor,
        mut cache: Option<&mut KvCache>,
        train: bool,
    ) -> Result<Tensor, ModelError> {
        let input = Input::check(
            ids,
            cache.as_deref_mut(),
            self.blocks.len(),
            self.config.max_position_embeddings,
            true,
        )?;
        let past = input.past;
        // Built from `ids` so they land on its device: `tch::Device` cannot name SDAA
        // (PrivateUse1), so `Tensor::arange(.., ids.device())` fails there.
        let positions = ids
            .select(0, 0)
            .ones_like()
            .to_kind(Kind::Int64)
            .cumsum(0, Kind::Int64)
            + (past - 1);
        // Dump scopes are the var-store paths (Hugging Face GPT-2's module names).
        let tokens = capture::module("wte", ids, || self.wte.forward(ids));
        let mut x = tokens + capture::module("wpe", &positions, || self.wpe.forward(&positions));
        x = x.dropout(self.config.hidden_dropout_prob, train);
        let mask = input.offset_mask(ids);
        let d = BlockDims {
            hidden: self.config.hidden_size,
            heads: self.config.num_attention_heads,
            dropout: self.config.hidden_dropout_prob,
            attn_dropout: if train {
                self.config.attention_probs_dropout_prob
            } else {
                0.0
            },
        };
        for (i, block) in self.blocks.iter().enumerate() {
            let slot = cache.as_mut().map(|c| c.slot(i));
            x = if self.recompute && train && slot.is_none() && x.requires_grad() {
                let blk = block.shallow();
                // Dropout draws random numbers: the rerun must draw the same ones.
                let preserve_rng = d.dropout > 0.0 || d.attn_dropout > 0.0;
                recomputed(&[&x], preserve_rng, move |io| {
                    blk.forward(&d, &io[0], None, None, 0, true)
                })?
            } else {
                block.forward(&d, &x, slot, mask.as_ref(), past, train)
            };
        }
        let x = capture::module("ln_f", &x, || x.apply(&self.ln_f));
        // The output projection shares wte's weight (Hugging Face names it lm_head).
        Ok(capture::module("lm_head", &x, || {
            x.linear::<&Tensor>(&self.wte.ws, None)
        }))
    }

    /// Mean next-token cross entropy of `logits` `[b, t, v]` against `labels` `[b, t]`, in fp32.
    pub fn loss(logits: &Tensor, labels: &Tensor) -> Tensor {
        modelzoo_text::lm::next_token_loss(logits, labels)
    }

    /// Parameters, counting the tied embedding once.
    pub fn num_params(&self) -> i64 {
        self.config.num_params()
    }

    /// Training FLOPs per token at sequence length `seq`: 6·N for the matmuls of forward and
    /// backward (N without the position table) plus 12·L·h·seq for attention scores
    /// (the PaLM / nanoGPT MFU formula).
    pub fn train_flops_per_token(&self, seq: i64) -> f64 {
        let c = &self.config;
        let n = (self.num_params() - c.max_position_embeddings * c.hidden_size) as f64;
        6.0 * n + 12.0 * (c.num_layers * c.hidden_size * seq) as f64
    }
}
