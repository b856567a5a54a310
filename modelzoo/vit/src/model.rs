//! The Vision Transformer with torchvision's architecture (`torchvision.models.VisionTransformer`),
//! parameter names and initialisation, so that parameter counts and state-dict keys match
//! `torchvision.models.vit_*` and torchvision's weights load by name ([`load_safetensors`]).
//!
//! Shape: a `patch`×`patch` stride-`patch` convolution (`conv_proj`) cuts the image into patch
//! embeddings, a learned class token is put in front, learned position embeddings are added
//! (`encoder.pos_embedding`), then pre-norm encoder blocks (`ln_1`, multi-head self-attention
//! with a packed `in_proj`, residual, `ln_2`, MLP `Linear → exact GELU → Linear`, residual),
//! a final LayerNorm (`encoder.ln`, eps 1e-6 as everywhere) and the classifier
//! (`heads.head`) on the class token. Dropout is 0, torchvision's default, so there is none.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use device_sdaa::capture;
use tch::nn::{self, ModuleT};
use tch::Tensor;

/// LayerNorm epsilon of every norm in torchvision's ViT (`partial(nn.LayerNorm, eps=1e-6)`).
const LN_EPS: f64 = 1e-6;

/// A `--model_name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    ViTB16,
    ViTB32,
    ViTL16,
    /// Not a torchvision model: a few-hundred-thousand-parameter ViT for tests and the PR
    /// check, where the real sizes would take minutes a step on a CPU.
    ViTTiny,
}

/// Every accepted `--model_name`.
pub const VARIANT_NAMES: [&str; 4] = ["vit_b_16", "vit_b_32", "vit_l_16", "vit_tiny"];

/// An unknown `--model_name`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown model_name {0:?}; valid: vit_b_16, vit_b_32, vit_l_16, vit_tiny")]
pub struct UnknownVariant(pub String);

impl FromStr for Variant {
    type Err = UnknownVariant;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "vit_b_16" => Variant::ViTB16,
            "vit_b_32" => Variant::ViTB32,
            "vit_l_16" => Variant::ViTL16,
            "vit_tiny" => Variant::ViTTiny,
            other => return Err(UnknownVariant(other.to_string())),
        })
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(VARIANT_NAMES[*self as usize])
    }
}

/// The sizes of a ViT, torchvision's `VisionTransformer(...)` arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViTConfig {
    pub patch_size: i64,
    pub num_layers: usize,
    pub num_heads: i64,
    pub hidden_dim: i64,
    pub mlp_dim: i64,
}

impl Variant {
    /// torchvision's `vit_b_16` / `vit_b_32` / `vit_l_16` builders' sizes; `vit_tiny` is ours
    /// (patch 8, hidden 64, 2 layers, 2 heads, MLP 128).
    pub fn config(self) -> ViTConfig {
        let (patch_size, num_layers, num_heads, hidden_dim, mlp_dim) = match self {
            Variant::ViTB16 => (16, 12, 12, 768, 3072),
            Variant::ViTB32 => (32, 12, 12, 768, 3072),
            Variant::ViTL16 => (16, 24, 16, 1024, 4096),
            Variant::ViTTiny => (8, 2, 2, 64, 128),
        };
        ViTConfig {
            patch_size,
            num_layers,
            num_heads,
            hidden_dim,
            mlp_dim,
        }
    }
}

/// An image size the model cannot take.
#[derive(Debug, Clone, thiserror::Error)]
#[error("--image_size {image_size} is not a multiple of {variant}'s patch size {patch_size}: the image must split into whole patches; pass a multiple of {patch_size} (e.g. {suggestion})")]
pub struct ImageSizeError {
    pub variant: Variant,
    pub image_size: i64,
    pub patch_size: i64,
    pub suggestion: i64,
}

impl ViTConfig {
    /// Tokens the encoder sees for `image_size`: the patches plus the class token.
    pub fn seq_length(&self, image_size: i64) -> i64 {
        let side = image_size / self.patch_size;
        side * side + 1
    }

    /// Trainable parameters for `image_size` and `num_classes`, counted from the sizes (the
    /// memory check uses it before anything is built; tests check it against the var store).
    pub fn parameter_count(&self, image_size: i64, num_classes: i64) -> i64 {
        let (h, m, p) = (self.hidden_dim, self.mlp_dim, self.patch_size);
        let conv = 3 * p * p * h + h;
        let tokens = h + self.seq_length(image_size) * h;
        let layer = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * m + m) + (m * h + h);
        conv + tokens + layer * self.num_layers as i64 + 2 * h + (h * num_classes + num_classes)
    }
}

/// Check that `variant` can take `image_size` (a whole number of patches per side).
pub fn check_image_size(variant: Variant, image_size: i64) -> Result<(), ImageSizeError> {
    let p = variant.config().patch_size;
    if image_size % p == 0 && image_size > 0 {
        return Ok(());
    }
    Err(ImageSizeError {
        variant,
        image_size,
        patch_size: p,
        suggestion: ((image_size + p - 1) / p).max(1) * p,
    })
}

fn layer_norm(p: nn::Path, dim: i64) -> nn::LayerNorm {
    nn::layer_norm(
        p,
        vec![dim],
        nn::LayerNormConfig {
            eps: LN_EPS,
            ..Default::default()
        },
    )
}

/// `nn.init.xavier_uniform_` of a `[fan_out, fan_in]` weight.
fn xavier_uniform(fan_out: i64, fan_in: i64) -> nn::Init {
    let a = (6.0 / (fan_in + fan_out) as f64).sqrt();
    nn::Init::Uniform { lo: -a, up: a }
}

/// One `EncoderBlock` (`encoder.layers.encoder_layer_{i}`).
#[derive(Debug)]
struct EncoderBlock {
    /// Module path, the dump scope.
    name: String,
    num_heads: i64,
    ln_1: nn::LayerNorm,
    in_proj_weight: Tensor,
    in_proj_bias: Tensor,
    out_proj: nn::Linear,
    ln_2: nn::LayerNorm,
    mlp_0: nn::Linear,
    mlp_3: nn::Linear,
}

impl EncoderBlock {
    /// torchvision's initialisation: `nn.MultiheadAttention`'s (in_proj xavier-uniform, biases
    /// 0, out_proj weight PyTorch's `Linear` default U(±1/√fan_in)) and `MLPBlock`'s (weights
    /// xavier-uniform, biases N(0, 1e-6)).
    fn new(p: &nn::Path, name: String, c: &ViTConfig) -> EncoderBlock {
        let (h, m) = (c.hidden_dim, c.mlp_dim);
        let ln_1 = layer_norm(p / "ln_1", h);
        let att = p / "self_attention";
        let in_proj_weight = att.var("in_proj_weight", &[3 * h, h], xavier_uniform(3 * h, h));
        let in_proj_bias = att.var("in_proj_bias", &[3 * h], nn::Init::Const(0.0));
        let bound = 1.0 / (h as f64).sqrt();
        let out_proj = nn::linear(
            &att / "out_proj",
            h,
            h,
            nn::LinearConfig {
                ws_init: nn::Init::Uniform {
                    lo: -bound,
                    up: bound,
                },
                bs_init: Some(nn::Init::Const(0.0)),
                bias: true,
            },
        );
        let ln_2 = layer_norm(p / "ln_2", h);
        let mlp = p / "mlp";
        let mlp_linear = |name: &str, cin: i64, cout: i64| {
            nn::linear(
                &mlp / name,
                cin,
                cout,
                nn::LinearConfig {
                    ws_init: xavier_uniform(cout, cin),
                    bs_init: Some(nn::Init::Randn {
                        mean: 0.0,
                        stdev: 1e-6,
                    }),
                    bias: true,
                },
            )
        };
        let mlp_0 = mlp_linear("0", h, m);
        let mlp_3 = mlp_linear("3", m, h);
        EncoderBlock {
            name,
            num_heads: c.num_heads,
            ln_1,
            in_proj_weight,
            in_proj_bias,
            out_proj,
            ln_2,
            mlp_0,
            mlp_3,
        }
    }

    /// `nn.MultiheadAttention(x, x, x, need_weights=False)` (batch first): the packed
    /// projection, scaled dot-product attention per head (no mask, no dropout), `out_proj`.
    fn self_attention(&self, x: &Tensor) -> Tensor {
        let (n, s, h) = x.size3().expect("encoder input is (batch, tokens, hidden)");
        let heads = self.num_heads;
        let qkv = x
            .linear(&self.in_proj_weight, Some(&self.in_proj_bias))
            .reshape([n, s, 3, heads, h / heads])
            .permute([2, 0, 3, 1, 4]);
        let (q, k, v) = (qkv.get(0), qkv.get(1), qkv.get(2));
        let y = Tensor::scaled_dot_product_attention::<Tensor>(
            &q, &k, &v, None, 0.0, false, None, false,
        );
        y.transpose(1, 2).reshape([n, s, h]).apply(&self.out_proj)
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let name = &self.name;
        capture::module(name, x, || {
            let y = capture::module(&format!("{name}.ln_1"), x, || x.apply(&self.ln_1));
            let y = capture::module(&format!("{name}.self_attention"), &y, || {
                self.self_attention(&y)
            });
            let x = y + x;
            let y = capture::module(&format!("{name}.ln_2"), &x, || x.apply(&self.ln_2));
            let y = capture::module(&format!("{name}.mlp"), &y, || {
                y.apply(&self.mlp_0).gelu("none").apply(&self.mlp_3)
            });
            x + y
        })
    }
}

/// A torchvision-shaped Vision Transformer for one image size.
#[derive(Debug)]
pub struct ViT {
    config: ViTConfig,
    conv_proj: nn::Conv2D,
    class_token: Tensor,
    pos_embedding: Tensor,
    layers: Vec<EncoderBlock>,
    ln: nn::LayerNorm,
    head: nn::Linear,
}

impl ViT {
    /// Build `variant` for `image_size` × `image_size` inputs with `num_classes` outputs under
    /// `p` (the var store root gives torchvision's names: `conv_proj.weight`,
    /// `encoder.layers.encoder_layer_0.self_attention.in_proj_weight`, `heads.head.bias`, ...),
    /// initialised as torchvision does. An image size that is not a whole number of patches is
    /// an error.
    pub fn new(
        p: &nn::Path,
        variant: Variant,
        image_size: i64,
        num_classes: i64,
    ) -> Result<ViT, ImageSizeError> {
        check_image_size(variant, image_size)?;
        let c = variant.config();
        let (h, ps) = (c.hidden_dim, c.patch_size);
        // conv_proj: trunc_normal_(std=sqrt(1/fan_in)) within ±2 (absolute), bias 0. At this
        // std (≤ 0.07) ±2 lies beyond 28σ, so the clamp below never changes a sample in
        // practice; it only keeps the bound torchvision states.
        let stdev = (1.0 / (3 * ps * ps) as f64).sqrt();
        let conv_proj = nn::conv2d(
            p / "conv_proj",
            3,
            h,
            ps,
            nn::ConvConfig {
                stride: ps,
                ws_init: nn::Init::Randn { mean: 0.0, stdev },
                bs_init: nn::Init::Const(0.0),
                ..Default::default()
            },
        );
        tch::no_grad(|| {
            let _ = conv_proj.ws.shallow_clone().clamp_(-2.0, 2.0);
        });
        let class_token = p.var("class_token", &[1, 1, h], nn::Init::Const(0.0));
        let enc = p / "encoder";
        let pos_embedding = enc.var(
            "pos_embedding",
            &[1, c.seq_length(image_size), h],
            nn::Init::Randn {
                mean: 0.0,
                stdev: 0.02,
            },
        );
        let layers_path = &enc / "layers";
        let layers = (0..c.num_layers)
            .map(|i| {
                let name = format!("encoder_layer_{i}");
                EncoderBlock::new(
                    &(&layers_path / name.as_str()),
                    format!("encoder.layers.{name}"),
                    &c,
                )
            })
            .collect();
        let ln = layer_norm(&enc / "ln", h);
        // heads.head starts at zero (torchvision: zeros_ on its weight and bias).
        let head = nn::linear(
            p / "heads" / "head",
            h,
            num_classes,
            nn::LinearConfig {
                ws_init: nn::Init::Const(0.0),
                bs_init: Some(nn::Init::Const(0.0)),
                bias: true,
            },
        );
        Ok(ViT {
            config: c,
            conv_proj,
            class_token,
            pos_embedding,
            layers,
            ln,
            head,
        })
    }

    /// The sizes this model was built with.
    pub fn config(&self) -> ViTConfig {
        self.config
    }
}

impl ModuleT for ViT {
    /// `(n, 3, size, size)` images → `(n, num_classes)` logits; `train` changes nothing (no
    /// dropout, no batch norm).
    fn forward_t(&self, x: &Tensor, _train: bool) -> Tensor {
        let h = self.config.hidden_dim;
        let n = x.size()[0];
        // _process_input: patches → (n, tokens, hidden).
        let y = capture::module("conv_proj", x, || x.apply(&self.conv_proj));
        let y = y.reshape([n, h, -1]).permute([0, 2, 1]);
        let cls = self.class_token.expand([n, -1, -1], false);
        let y = Tensor::cat(&[cls, y], 1);
        let y = capture::module("encoder", &y, || {
            let mut y = &y + &self.pos_embedding;
            for layer in &self.layers {
                y = layer.forward(&y);
            }
            capture::module("encoder.ln", &y, || y.apply(&self.ln))
        });
        let y = y.select(1, 0);
        capture::module("heads.head", &y, || y.apply(&self.head))
    }
}

/// Why torchvision weights did not load (see [`load_safetensors`]).
pub use modelzoo_engine::state_dict::StateDictError as LoadError;

/// Copies every variable of `vs` from torchvision's safetensors state dict at `path`, by name,
/// strictly (see [`modelzoo_engine::state_dict::load_safetensors`]). Returns the number of
/// tensors loaded.
pub fn load_safetensors(vs: &nn::VarStore, path: &Path) -> Result<usize, LoadError> {
    modelzoo_engine::state_dict::load_safetensors(
        vs,
        path,
        &|_| false,
        "give torchvision's state dict (conv_proj.weight, class_token, encoder.pos_embedding, ..., heads.head.bias) of the --model_name, --image_size and --num_classes the weights were made for",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print() {
        for n in VARIANT_NAMES {
            assert_eq!(n.parse::<Variant>().unwrap().to_string(), n);
        }
        let e = "vit_h_14".parse::<Variant>().unwrap_err();
        assert!(e.to_string().contains("vit_b_16, vit_b_32"), "{e}");
    }

    #[test]
    fn an_image_size_that_is_not_whole_patches_is_refused() {
        let e = check_image_size(Variant::ViTB16, 100)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--image_size 100 is not a multiple of vit_b_16's patch size 16")
                && e.contains("e.g. 112"),
            "{e}"
        );
        assert!(check_image_size(Variant::ViTB32, 224).is_ok());
        let e = check_image_size(Variant::ViTB32, 16)
            .unwrap_err()
            .to_string();
        assert!(e.contains("e.g. 32"), "{e}");
    }

    #[test]
    fn the_counted_parameters_are_the_var_store_s() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = ViT::new(&vs.root(), Variant::ViTTiny, 32, 10).unwrap();
        assert_eq!(
            modelzoo_engine::parameter_count(&vs),
            net.config().parameter_count(32, 10)
        );
    }
}
