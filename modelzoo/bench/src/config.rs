//! Case configs, FlagPerf's three layers: the case's `_base.yaml` (every parameter, the
//! `mutable_params` a vendor may override, the target), the vendor's
//! `config_<hardware>x<nnodes>x<nproc>.yaml`, and the test_conf (`--test-conf` overrides and
//! `-o key=value`). Later layers win; only `mutable_params` may be overridden.
//!
//! ```text
//! cases/hardware.yaml                                    hardware id → vendor, --device, peak FLOP/s
//! cases/benchmarks/<model>/<framework>/_base.yaml        the case
//! cases/<vendor>/<model>-<framework>/config_<hw>x<n>x<p>.yaml
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_yaml::Value;

use crate::key::CaseKey;
use crate::BenchError;

/// Flags the bench sets itself on every run; a config may not set them.
pub const RESERVED: [&str; 10] = [
    "device",
    "nproc_per_node",
    "nnode",
    "node_rank",
    "master_addr",
    "master_port",
    "output_dir",
    "dataset_path",
    "print_cmd",
    "resume",
];

/// `data_dir` value meaning "the model's built-in data" (no dataset needed).
pub const SYNTHETIC: &str = "synthetic";

/// One hardware of `hardware.yaml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Hardware {
    /// The vendor folder its configs live in (`nvidia`, `cpu`, `sdaa`).
    pub vendor: String,
    /// `--device` of the runs (`cpu`, `cuda`, `sdaa`).
    pub device: String,
    /// Dense peak FLOP/s per precision (`fp32`, `bf16`, `fp16`) for MFU; empty = use the peak
    /// the run measured.
    #[serde(default)]
    pub peak_flops: BTreeMap<String, f64>,
    /// Where the peaks come from (a datasheet), said next to every MFU.
    #[serde(default)]
    pub peak_source: Option<String>,
}

/// A case's `_base.yaml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Base {
    /// The model's own command (`run_resnet`).
    pub binary: String,
    /// What `p_*` count (`images`, `tokens`).
    pub items: String,
    /// MFU is computed for transformer models.
    #[serde(default)]
    pub transformer: bool,
    /// The logged metric `final accuracy` / `final loss` is read from (`val.top1`, `val.loss`).
    pub eval_metric: String,
    /// Converged when the final `eval_metric` ≥ this ...
    #[serde(default)]
    pub target_acc: Option<f64>,
    /// ... or ≤ this.
    #[serde(default)]
    pub target_loss: Option<f64>,
    /// Every parameter of the case: run flags (`batch_size`), FleetX overrides
    /// (`Engine.max_steps`, passed as `-o`), and `vendor` / `data_dir`.
    pub params: BTreeMap<String, Value>,
    /// The parameters a vendor config or a test_conf may override.
    pub mutable_params: Vec<String>,
}

/// Which layer a value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    Base,
    Vendor,
    TestConf,
}

/// A case with its three layers merged.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub key: CaseKey,
    pub hardware: Hardware,
    pub base: Base,
    pub base_path: PathBuf,
    pub vendor_path: PathBuf,
    /// Every parameter with its final value and the layer it came from.
    pub params: BTreeMap<String, (Value, Layer)>,
}

impl Resolved {
    /// A parameter's value as text (`None` when absent or null).
    pub fn text(&self, name: &str) -> Option<String> {
        self.params.get(name).and_then(|(v, _)| scalar_text(v))
    }

    /// Precision of the runs: `fp32`, or `amp_bf16` / `amp_fp16` (`amp_dtype: auto` = bf16 on
    /// the CPU, fp16 on cuda / sdaa, as the runs resolve it).
    pub fn precision(&self) -> String {
        let on = |k: &str| matches!(self.params.get(k), Some((Value::Bool(true), _)));
        if on("Engine.mix_precision.use_pure_fp16") && !on("autocast") {
            // FleetX: the config's own AMP switch and dtype.
            return match self.text("Engine.mix_precision.dtype").as_deref() {
                Some("float16" | "fp16") => "amp_fp16".into(),
                _ => "amp_bf16".into(),
            };
        }
        if !on("autocast") {
            return "fp32".into();
        }
        match self.text("amp_dtype").as_deref() {
            Some("fp16") => "amp_fp16".into(),
            Some("bf16") => "amp_bf16".into(),
            _ if self.hardware.device == "cpu" => "amp_bf16".into(),
            _ => "amp_fp16".into(),
        }
    }
}

/// A YAML scalar as command-line text.
pub fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        other => serde_yaml::to_string(other)
            .ok()
            .map(|s| s.trim().to_string()),
    }
}

/// The shipped case configs under one directory.
#[derive(Debug, Clone)]
pub struct CaseStore {
    pub root: PathBuf,
    pub hardware: BTreeMap<String, Hardware>,
}

fn read_yaml<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::Config {
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    serde_yaml::from_str(&text).map_err(|e| BenchError::Config {
        path: path.to_path_buf(),
        why: e.to_string(),
    })
}

fn dir_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

impl CaseStore {
    /// Open the configs under `root` (it holds `hardware.yaml` and `benchmarks/`).
    pub fn open(root: &Path) -> Result<CaseStore, BenchError> {
        let hw_path = root.join("hardware.yaml");
        if !hw_path.is_file() {
            return Err(BenchError::Config {
                path: hw_path,
                why: "missing: is --cases-dir the folder of the shipped case configs (modelzoo/bench/cases)?".into(),
            });
        }
        Ok(CaseStore {
            root: root.to_path_buf(),
            hardware: read_yaml(&hw_path)?,
        })
    }

    /// The models with a case (`benchmarks/<model>`).
    pub fn models(&self) -> Vec<String> {
        dir_names(&self.root.join("benchmarks"))
    }

    /// Load the case `key` names and merge its layers with the test_conf's `overrides`
    /// (`data_dir` of the test_conf entry included, as FlagPerf's CASES value).
    pub fn resolve(
        &self,
        key: &CaseKey,
        overrides: &[(String, Value)],
    ) -> Result<Resolved, BenchError> {
        let models = self.models();
        if !models.contains(&key.model) {
            return Err(BenchError::Unknown {
                what: "model",
                name: key.model.clone(),
                valid: models,
            });
        }
        let frameworks = dir_names(&self.root.join("benchmarks").join(&key.model));
        if !frameworks.contains(&key.framework) {
            return Err(BenchError::Unknown {
                what: "framework",
                name: key.framework.clone(),
                valid: frameworks,
            });
        }
        let Some(hardware) = self.hardware.get(&key.hardware) else {
            return Err(BenchError::Unknown {
                what: "hardware",
                name: key.hardware.clone(),
                valid: self.hardware.keys().cloned().collect(),
            });
        };
        let base_path = self
            .root
            .join("benchmarks")
            .join(&key.model)
            .join(&key.framework)
            .join("_base.yaml");
        let base: Base = read_yaml(&base_path)?;
        check_base(&base, &base_path)?;
        let vendor_dir = self
            .root
            .join(&hardware.vendor)
            .join(format!("{}-{}", key.model, key.framework));
        let vendor_path = vendor_dir.join(format!(
            "config_{}x{}x{}.yaml",
            key.hardware, key.nnodes, key.nproc
        ));
        if !vendor_path.is_file() {
            let mut shipped: Vec<String> = std::fs::read_dir(&vendor_dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with("config_"))
                .collect();
            shipped.sort();
            return Err(BenchError::NoVendorConfig {
                path: vendor_path,
                shipped,
            });
        }
        let vendor: Option<BTreeMap<String, Value>> = read_yaml(&vendor_path)?;
        let vendor: Vec<(String, Value)> = vendor.unwrap_or_default().into_iter().collect();
        let params = layer(
            &base,
            &[
                (Layer::Vendor, vendor_path.display().to_string(), &vendor),
                (Layer::TestConf, "the test_conf".to_string(), overrides),
            ],
            &base_path,
        )?;
        let vendor_param = params.get("vendor").and_then(|(v, _)| scalar_text(v));
        if vendor_param
            .as_deref()
            .is_some_and(|v| v != hardware.vendor)
        {
            return Err(BenchError::Config {
                path: vendor_path,
                why: format!(
                    "vendor is `{}` but hardware {} belongs to vendor `{}` (hardware.yaml)",
                    vendor_param.unwrap_or_default(),
                    key.hardware,
                    hardware.vendor
                ),
            });
        }
        Ok(Resolved {
            key: key.clone(),
            hardware: hardware.clone(),
            base,
            base_path,
            vendor_path,
            params,
        })
    }
}

/// A base config must define every mutable parameter, set no flag the bench owns, and name
/// one target.
fn check_base(base: &Base, path: &Path) -> Result<(), BenchError> {
    let bad = |why: String| BenchError::Config {
        path: path.to_path_buf(),
        why,
    };
    if let Some(r) = RESERVED.iter().find(|r| base.params.contains_key(**r)) {
        return Err(bad(format!(
            "params sets `{r}`, which the bench sets itself ({})",
            RESERVED.join(", ")
        )));
    }
    if let Some(m) = base
        .mutable_params
        .iter()
        .find(|m| !base.params.contains_key(*m))
    {
        return Err(bad(format!(
            "mutable_params lists `{m}`, which params does not define"
        )));
    }
    if base.target_acc.is_some() == base.target_loss.is_some() {
        return Err(bad("set exactly one of target_acc and target_loss".into()));
    }
    Ok(())
}

/// Parameters of one layer: the layer, where they came from (for messages), the values.
pub type LayerValues<'a> = (Layer, String, &'a [(String, Value)]);

/// Merge `layers` (in order, each later one winning) over the base parameters. A key outside
/// `mutable_params` is refused, naming the key, the layer it came from and the mutable ones.
pub fn layer(
    base: &Base,
    layers: &[LayerValues<'_>],
    base_path: &Path,
) -> Result<BTreeMap<String, (Value, Layer)>, BenchError> {
    let mut params: BTreeMap<String, (Value, Layer)> = base
        .params
        .iter()
        .map(|(k, v)| (k.clone(), (v.clone(), Layer::Base)))
        .collect();
    for (which, source, values) in layers {
        for (k, v) in values.iter() {
            if !base.mutable_params.contains(k) {
                return Err(BenchError::NotMutable {
                    key: k.clone(),
                    layer: source.clone(),
                    base: base_path.to_path_buf(),
                    mutable: base.mutable_params.clone(),
                });
            }
            params.insert(k.clone(), (v.clone(), *which));
        }
    }
    Ok(params)
}

/// `key=value` as a test_conf override (the value read as a YAML scalar: `8`, `true`, `1e-3`,
/// `text`).
pub fn parse_override(text: &str) -> Result<(String, Value), BenchError> {
    let Some((k, v)) = text.split_once('=') else {
        return Err(BenchError::Usage(format!(
            "-o {text}: expected key=value (e.g. -o batch_size=16)"
        )));
    };
    let k = k.trim();
    if k.is_empty() {
        return Err(BenchError::Usage(format!("-o {text}: the key is empty")));
    }
    let value = serde_yaml::from_str::<Value>(v.trim()).unwrap_or(Value::String(v.to_string()));
    let value = match value {
        Value::Sequence(_) | Value::Mapping(_) | Value::Tagged(_) => Value::String(v.to_string()),
        other => other,
    };
    Ok((k.to_string(), value))
}

/// `--test-conf FILE`: FlagPerf's test_conf as YAML.
///
/// ```yaml
/// cases:                       # case key → dataset path ("" = the config's data_dir)
///   "resnet:rust-tch:cpu:1:1:2": ""
///   "resnet:rust-tch:A100:1:8:1": /data/imagenet
/// overrides:                   # the test_conf layer, for every case
///   step: 100
/// ```
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TestConf {
    pub cases: BTreeMap<String, Option<String>>,
    #[serde(default)]
    pub overrides: BTreeMap<String, Value>,
}

impl TestConf {
    pub fn load(path: &Path) -> Result<TestConf, BenchError> {
        let conf: TestConf = read_yaml(path)?;
        if conf.cases.is_empty() {
            return Err(BenchError::Config {
                path: path.to_path_buf(),
                why: "`cases` is empty: list at least one case key".into(),
            });
        }
        Ok(conf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Base {
        serde_yaml::from_str(
            "binary: run_resnet\nitems: images\neval_metric: val.top1\ntarget_acc: 76\n\
             params: {batch_size: 32, lr: 0.1, image_size: 224, vendor: nvidia}\n\
             mutable_params: [batch_size, lr, vendor]\n",
        )
        .unwrap()
    }

    fn kv(k: &str, v: i64) -> (String, Value) {
        (k.to_string(), Value::from(v))
    }

    #[test]
    fn test_conf_beats_vendor_beats_base() {
        let b = base();
        let vendor = [kv("batch_size", 16), kv("lr", 1)];
        let test = [kv("batch_size", 8)];
        let p = layer(
            &b,
            &[
                (Layer::Vendor, "v".into(), &vendor[..]),
                (Layer::TestConf, "t".into(), &test[..]),
            ],
            Path::new("_base.yaml"),
        )
        .unwrap();
        assert_eq!(p["batch_size"], (Value::from(8), Layer::TestConf));
        assert_eq!(p["lr"], (Value::from(1), Layer::Vendor));
        assert_eq!(p["image_size"], (Value::from(224), Layer::Base));
    }

    #[test]
    fn overriding_a_key_outside_mutable_params_names_it_and_the_mutable_ones() {
        let b = base();
        for which in [Layer::Vendor, Layer::TestConf] {
            let bad = [kv("image_size", 64)];
            let e = layer(
                &b,
                &[(which, "layer X".into(), &bad[..])],
                Path::new("_base.yaml"),
            )
            .unwrap_err();
            assert_eq!(e.exit_code(), 2);
            let msg = e.to_string();
            assert!(
                msg.contains("`image_size`") && msg.contains("layer X"),
                "{msg}"
            );
            assert!(msg.contains("batch_size, lr, vendor"), "{msg}");
        }
    }

    #[test]
    fn overrides_parse_as_yaml_scalars() {
        assert_eq!(parse_override("step=8").unwrap(), kv("step", 8));
        assert_eq!(
            parse_override("autocast=true").unwrap().1,
            Value::Bool(true)
        );
        assert_eq!(
            parse_override("data_dir=/d/x").unwrap().1,
            Value::String("/d/x".into())
        );
        assert!(parse_override("step").is_err());
        assert!(parse_override("=3").is_err());
    }
}
