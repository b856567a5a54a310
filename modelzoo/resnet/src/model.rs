//! ResNet-18/34/50/101/152 with torchvision's architecture, parameter names and initialisation
//! (conv: kaiming-normal fan_out; BN: weight 1, bias 0; fc: PyTorch `Linear` default), so
//! parameter counts and state-dict keys match `torchvision.models.resnet*`.

use std::fmt;
use std::str::FromStr;

use device_sdaa::capture;
use device_sdaa::dist::ProcessGroup;
use device_sdaa::fused;
use tch::nn::{self, ModuleT};
use tch::Tensor;

/// A ResNet depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    ResNet18,
    ResNet34,
    ResNet50,
    ResNet101,
    ResNet152,
}

/// Every accepted `--model_name`.
pub const VARIANT_NAMES: [&str; 5] = ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"];

/// An unknown `--model_name`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown model_name {0:?}; valid: resnet18, resnet34, resnet50, resnet101, resnet152")]
pub struct UnknownVariant(pub String);

impl FromStr for Variant {
    type Err = UnknownVariant;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "resnet18" => Variant::ResNet18,
            "resnet34" => Variant::ResNet34,
            "resnet50" => Variant::ResNet50,
            "resnet101" => Variant::ResNet101,
            "resnet152" => Variant::ResNet152,
            other => return Err(UnknownVariant(other.to_string())),
        })
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = *self as usize;
        f.write_str(VARIANT_NAMES[i])
    }
}

impl Variant {
    /// (bottleneck blocks?, blocks per stage)
    fn layout(self) -> (bool, [usize; 4]) {
        match self {
            Variant::ResNet18 => (false, [2, 2, 2, 2]),
            Variant::ResNet34 => (false, [3, 4, 6, 3]),
            Variant::ResNet50 => (true, [3, 4, 6, 3]),
            Variant::ResNet101 => (true, [3, 4, 23, 3]),
            Variant::ResNet152 => (true, [3, 8, 36, 3]),
        }
    }
}

fn conv(p: nn::Path, cin: i64, cout: i64, k: i64, stride: i64, padding: i64) -> nn::Conv2D {
    // kaiming_normal_(mode="fan_out", nonlinearity="relu"): std = sqrt(2 / (cout * k * k)).
    let std = (2.0 / (cout * k * k) as f64).sqrt();
    nn::conv2d(
        p,
        cin,
        cout,
        k,
        nn::ConvConfig {
            stride,
            padding,
            bias: false,
            ws_init: nn::Init::Randn {
                mean: 0.0,
                stdev: std,
            },
            ..Default::default()
        },
    )
}

fn bn(p: nn::Path, c: i64) -> nn::BatchNorm {
    nn::batch_norm2d(
        p,
        c,
        nn::BatchNormConfig {
            ws_init: nn::Init::Const(1.0),
            bs_init: nn::Init::Const(0.0),
            ..Default::default()
        },
    )
}

/// torch.nn.BatchNorm2d's defaults, which tch's batch norm uses too.
const BN_MOMENTUM: f64 = 0.1;
const BN_EPS: f64 = 1e-5;

/// Batch norm of `x`: over every rank's batch when `sync` is given and training
/// (SyncBatchNorm), else tch's per-process batch norm.
fn norm(b: &nn::BatchNorm, x: &Tensor, train: bool, sync: Option<&ProcessGroup>) -> Tensor {
    match (sync, train, &b.ws, &b.bs) {
        (Some(g), true, Some(w), Some(bias)) => g
            .sync_batch_norm(
                x,
                w,
                bias,
                &b.running_mean,
                &b.running_var,
                BN_MOMENTUM,
                BN_EPS,
            )
            .unwrap_or_else(|e| panic!("{e}")),
        _ => x.apply_t(b, train),
    }
}

/// How a forward pass runs: training or not, SyncBatchNorm's group, and whether batch norm may
/// be fused with the ReLU after it.
#[derive(Clone, Copy)]
struct Pass<'a> {
    train: bool,
    sync: Option<&'a ProcessGroup>,
    fuse: bool,
}

/// `relu(bn(x) [+ residual()])`: one fused op (device_sdaa::fused) when training per process
/// on the CPU in channels-last with nothing capturing ops for a dump (whose records name the
/// three ops), else batch norm, add and ReLU as three. The residual is computed after the
/// batch norm, as torchvision orders a block's ops.
fn norm_relu(
    b: &nn::BatchNorm,
    name: &str,
    x: &Tensor,
    residual: Option<&dyn Fn() -> Tensor>,
    pass: Pass,
) -> Tensor {
    let may_fuse = pass.fuse && pass.train && pass.sync.is_none() && !capture::active();
    let (true, Some(weight), Some(bias)) = (may_fuse, &b.ws, &b.bs) else {
        return unfused(b, name, x, || residual.map(|f| f()), pass);
    };
    let params = fused::BatchNormParams {
        weight,
        bias,
        running_mean: &b.running_mean,
        running_var: &b.running_var,
        momentum: BN_MOMENTUM,
        eps: BN_EPS,
    };
    let r = residual.map(|f| f());
    if fused::fusable(x, r.as_ref(), &params) {
        return fused::batch_norm_relu(x, r.as_ref(), &params).unwrap_or_else(|e| panic!("{e}"));
    }
    unfused(b, name, x, || r, pass)
}

/// [`norm_relu`] as three ops, the residual computed after the batch norm.
fn unfused(
    b: &nn::BatchNorm,
    name: &str,
    x: &Tensor,
    residual: impl FnOnce() -> Option<Tensor>,
    pass: Pass,
) -> Tensor {
    let y = capture::module(name, x, || norm(b, x, pass.train, pass.sync));
    match residual() {
        Some(r) => (y + r).relu(),
        None => y.relu(),
    }
}

/// A conv + batch norm pair and their module names (dump scopes).
#[derive(Debug)]
struct ConvBn {
    conv: nn::Conv2D,
    bn: nn::BatchNorm,
    conv_name: String,
    bn_name: String,
}

impl ConvBn {
    fn new(conv: nn::Conv2D, bn: nn::BatchNorm, conv_name: String, bn_name: String) -> ConvBn {
        ConvBn {
            conv,
            bn,
            conv_name,
            bn_name,
        }
    }

    fn conv(&self, x: &Tensor) -> Tensor {
        capture::module(&self.conv_name, x, || x.apply(&self.conv))
    }

    /// conv → bn.
    fn forward_t(&self, x: &Tensor, pass: Pass) -> Tensor {
        let y = self.conv(x);
        capture::module(&self.bn_name, &y, || {
            norm(&self.bn, &y, pass.train, pass.sync)
        })
    }

    /// conv → bn [→ + residual()] → relu.
    fn forward_relu(
        &self,
        x: &Tensor,
        residual: Option<&dyn Fn() -> Tensor>,
        pass: Pass,
    ) -> Tensor {
        norm_relu(&self.bn, &self.bn_name, &self.conv(x), residual, pass)
    }
}

#[derive(Debug)]
struct Block {
    /// The block's module path (`layer1.0`), its dump scope.
    name: String,
    convs: Vec<ConvBn>,
    downsample: Option<ConvBn>,
}

impl Block {
    fn new(
        p: &nn::Path,
        name: String,
        bottleneck: bool,
        cin: i64,
        planes: i64,
        stride: i64,
    ) -> (Block, i64) {
        let expansion = if bottleneck { 4 } else { 1 };
        let cout = planes * expansion;
        let convs = if bottleneck {
            vec![
                ConvBn::new(
                    conv(p / "conv1", cin, planes, 1, 1, 0),
                    bn(p / "bn1", planes),
                    format!("{name}.conv1"),
                    format!("{name}.bn1"),
                ),
                ConvBn::new(
                    conv(p / "conv2", planes, planes, 3, stride, 1),
                    bn(p / "bn2", planes),
                    format!("{name}.conv2"),
                    format!("{name}.bn2"),
                ),
                ConvBn::new(
                    conv(p / "conv3", planes, cout, 1, 1, 0),
                    bn(p / "bn3", cout),
                    format!("{name}.conv3"),
                    format!("{name}.bn3"),
                ),
            ]
        } else {
            vec![
                ConvBn::new(
                    conv(p / "conv1", cin, planes, 3, stride, 1),
                    bn(p / "bn1", planes),
                    format!("{name}.conv1"),
                    format!("{name}.bn1"),
                ),
                ConvBn::new(
                    conv(p / "conv2", planes, planes, 3, 1, 1),
                    bn(p / "bn2", planes),
                    format!("{name}.conv2"),
                    format!("{name}.bn2"),
                ),
            ]
        };
        let downsample = (stride != 1 || cin != cout).then(|| {
            let d = p / "downsample";
            ConvBn::new(
                conv(&d / "0", cin, cout, 1, stride, 0),
                bn(&d / "1", cout),
                format!("{name}.downsample.0"),
                format!("{name}.downsample.1"),
            )
        });
        (
            Block {
                name,
                convs,
                downsample,
            },
            cout,
        )
    }

    fn forward_t(&self, x: &Tensor, pass: Pass) -> Tensor {
        capture::module(&self.name, x, || {
            let (last, inner) = self.convs.split_last().expect("a block has convolutions");
            let y = inner
                .iter()
                .fold(x.shallow_clone(), |y, cb| cb.forward_relu(&y, None, pass));
            let identity = || match &self.downsample {
                Some(cb) => cb.forward_t(x, pass),
                None => x.shallow_clone(),
            };
            last.forward_relu(&y, Some(&identity), pass)
        })
    }
}

/// A torchvision-shaped ResNet.
#[derive(Debug)]
pub struct ResNet {
    conv1: nn::Conv2D,
    bn1: nn::BatchNorm,
    layers: Vec<Block>,
    fc: nn::Linear,
    /// Data parallel with `--sync_bn`: the group BatchNorm statistics are taken over.
    sync_bn: Option<ProcessGroup>,
    /// Batch norm fused with its ReLU where it can be (see `norm_relu`): on for a network that
    /// trains in channels-last. Off otherwise, so an nchw run keeps its ops everywhere, even
    /// where a 1×1 map's layout is channels-last too (a cpu run then matches an sdaa one).
    fuse_bn_relu: bool,
}

impl ResNet {
    /// Build `variant` with `num_classes` outputs under `p` (use the var store root to get
    /// torchvision's names: `conv1.weight`, `layer1.0.bn1.running_mean`, `fc.bias`, ...).
    pub fn new(p: &nn::Path, variant: Variant, num_classes: i64) -> ResNet {
        let (bottleneck, counts) = variant.layout();
        let conv1 = conv(p / "conv1", 3, 64, 7, 2, 3);
        let bn1 = bn(p / "bn1", 64);
        let mut layers = Vec::new();
        let mut cin = 64;
        for (stage, (&n, planes)) in counts.iter().zip([64i64, 128, 256, 512]).enumerate() {
            let lp = p / format!("layer{}", stage + 1);
            for i in 0..n {
                let stride = if i == 0 && stage > 0 { 2 } else { 1 };
                let name = format!("layer{}.{i}", stage + 1);
                let (block, cout) = Block::new(
                    &(&lp / i.to_string()),
                    name,
                    bottleneck,
                    cin,
                    planes,
                    stride,
                );
                layers.push(block);
                cin = cout;
            }
        }
        let bound = 1.0 / (cin as f64).sqrt();
        let fc = nn::linear(
            p / "fc",
            cin,
            num_classes,
            nn::LinearConfig {
                ws_init: nn::Init::Uniform {
                    lo: -bound,
                    up: bound,
                },
                bs_init: Some(nn::Init::Uniform {
                    lo: -bound,
                    up: bound,
                }),
                bias: true,
            },
        );
        ResNet {
            conv1,
            bn1,
            layers,
            fc,
            sync_bn: None,
            fuse_bn_relu: false,
        }
    }

    /// Fuse batch norm with the ReLU after it where the op allows, for a network whose weights
    /// and inputs are channels-last (off by default: separate ops).
    pub fn set_fused_bn_relu(&mut self, on: bool) {
        self.fuse_bn_relu = on;
    }

    /// Normalise with batch statistics over all ranks of `group` when training.
    pub fn set_sync_bn(&mut self, group: ProcessGroup) {
        self.sync_bn = Some(group);
    }
}

impl ModuleT for ResNet {
    fn forward_t(&self, x: &Tensor, train: bool) -> Tensor {
        let pass = Pass {
            train,
            sync: self.sync_bn.as_ref(),
            fuse: self.fuse_bn_relu,
        };
        // Dump scopes are the var-store paths (torchvision's module names).
        let y = capture::module("conv1", x, || x.apply(&self.conv1));
        let y = norm_relu(&self.bn1, "bn1", &y, None, pass);
        let mut y = capture::module("maxpool", &y, || {
            y.max_pool2d([3, 3], [2, 2], [1, 1], [1, 1], false)
        });
        for b in &self.layers {
            y = b.forward_t(&y, pass);
        }
        let y = capture::module("avgpool", &y, || y.adaptive_avg_pool2d([1, 1])).flatten(1, -1);
        capture::module("fc", &y, || y.apply(&self.fc))
    }
}

/// Number of trainable parameters in `vs` (shared with every model: the engine's).
pub use modelzoo_engine::parameter_count;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print() {
        for n in VARIANT_NAMES {
            assert_eq!(n.parse::<Variant>().unwrap().to_string(), n);
        }
        let e = "resnet19".parse::<Variant>().unwrap_err();
        assert!(e.to_string().contains("resnet18, resnet34"), "{e}");
    }
}
