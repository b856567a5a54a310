//! ResNet-18/34/50/101/152 with torchvision's architecture, parameter names and initialisation
//! (conv: kaiming-normal fan_out; BN: weight 1, bias 0; fc: PyTorch `Linear` default), so
//! parameter counts and state-dict keys match `torchvision.models.resnet*`.

use std::fmt;
use std::str::FromStr;

use device_sdaa::capture;
use device_sdaa::dist::ProcessGroup;
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

/// Batch norm of `x`: over every rank's batch when `sync` is given and training
/// (SyncBatchNorm), else tch's per-process batch norm.
fn norm(b: &nn::BatchNorm, x: &Tensor, train: bool, sync: Option<&ProcessGroup>) -> Tensor {
    match (sync, train, &b.ws, &b.bs) {
        (Some(g), true, Some(w), Some(bias)) => g
            .sync_batch_norm(x, w, bias, &b.running_mean, &b.running_var, 0.1, 1e-5)
            .unwrap_or_else(|e| panic!("{e}")),
        _ => x.apply_t(b, train),
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

    fn forward_t(&self, x: &Tensor, train: bool, sync: Option<&ProcessGroup>) -> Tensor {
        let y = capture::module(&self.conv_name, x, || x.apply(&self.conv));
        capture::module(&self.bn_name, &y, || norm(&self.bn, &y, train, sync))
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

    fn forward_t(&self, x: &Tensor, train: bool, sync: Option<&ProcessGroup>) -> Tensor {
        capture::module(&self.name, x, || {
            let mut y = x.shallow_clone();
            let last = self.convs.len() - 1;
            for (i, cb) in self.convs.iter().enumerate() {
                y = cb.forward_t(&y, train, sync);
                if i < last {
                    y = y.relu();
                }
            }
            let identity = match &self.downsample {
                Some(cb) => cb.forward_t(x, train, sync),
                None => x.shallow_clone(),
            };
            (y + identity).relu()
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
        }
    }

    /// Normalise with batch statistics over all ranks of `group` when training.
    pub fn set_sync_bn(&mut self, group: ProcessGroup) {
        self.sync_bn = Some(group);
    }
}

impl ModuleT for ResNet {
    fn forward_t(&self, x: &Tensor, train: bool) -> Tensor {
        let sync = self.sync_bn.as_ref();
        // Dump scopes are the var-store paths (torchvision's module names).
        let y = capture::module("conv1", x, || x.apply(&self.conv1));
        let y = capture::module("bn1", &y, || norm(&self.bn1, &y, train, sync)).relu();
        let mut y = capture::module("maxpool", &y, || {
            y.max_pool2d([3, 3], [2, 2], [1, 1], [1, 1], false)
        });
        for b in &self.layers {
            y = b.forward_t(&y, train, sync);
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
