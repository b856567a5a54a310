//! serde's view of a case: which keys there are (unknown ones refused), a key given empty
//! told from one missing, and serde's messages reworded.

use serde::{Deserialize, Deserializer};
use serde_yaml::Value;

use super::schema::{Scalar, ScalarKind};

/// A key that is there (even with an empty value) or not: serde's `Option` cannot tell a
/// missing key from `key:` with nothing after it, and the rules word the two differently.
#[derive(Debug, Default)]
pub(super) enum Field {
    #[default]
    Missing,
    Given(Value),
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Field, D::Error> {
        Value::deserialize(d).map(Field::Given)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCase {
    #[serde(default)]
    pub case_name: Field,
    #[serde(default)]
    pub desc: Option<RawDesc>,
    #[serde(default)]
    pub params: Option<RawParams>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDesc {
    #[serde(default)]
    pub run_dir: Field,
    #[serde(default)]
    pub run_file: Field,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawParams {
    #[serde(default)]
    nnodes: Field,
    #[serde(default)]
    nproc_per_node: Field,
    #[serde(default)]
    batch_size: Field,
    #[serde(default)]
    model_name: Field,
    #[serde(default)]
    dataset_path: Field,
    #[serde(default)]
    step: Field,
    #[serde(default)]
    epoch: Field,
    #[serde(default)]
    lr: Field,
    #[serde(default)]
    device: Field,
    #[serde(default)]
    autocast: Field,
    #[serde(default)]
    pub others: Field,
}

impl RawParams {
    pub fn get(&self, name: &str) -> &Field {
        match name {
            "nnodes" => &self.nnodes,
            "nproc_per_node" => &self.nproc_per_node,
            "batch_size" => &self.batch_size,
            "model_name" => &self.model_name,
            "dataset_path" => &self.dataset_path,
            "step" => &self.step,
            "epoch" => &self.epoch,
            "lr" => &self.lr,
            "device" => &self.device,
            "autocast" => &self.autocast,
            _ => &self.others,
        }
    }
}

/// A value as a single argument: `Ok(None)` when empty (null or blank), `Err` with what it is
/// when it is a list or a mapping.
pub(super) fn scalar(value: &Value) -> Result<Option<Scalar>, &'static str> {
    match value {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(Scalar {
            text: if *b { "True" } else { "False" }.into(),
            kind: ScalarKind::Bool,
        })),
        Value::Number(n) => Ok(Some(Scalar {
            text: n.to_string(),
            kind: if n.is_f64() {
                ScalarKind::Float
            } else {
                ScalarKind::Integer
            },
        })),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => Ok(Some(Scalar {
            text: s.clone(),
            kind: ScalarKind::String,
        })),
        Value::Sequence(_) => Err("a list"),
        Value::Mapping(_) => Err("a mapping"),
        Value::Tagged(_) => Err("a tagged value"),
    }
}
/// serde's message for a case, with the valid keys named in words and what to do.
pub(super) fn explain(message: &str, path: &[String]) -> String {
    let message = message
        .replace(
            "struct RawCase",
            "a case: a mapping of case_name, desc and params",
        )
        .replace("struct RawDesc", "a mapping of run_dir and run_file")
        .replace(
            "struct RawInferenceCase",
            "a TecoInference case: a mapping of case_name, run_dir and its stages",
        )
        .replace(
            "struct RawStage",
            "a stage: a mapping of run_file and params",
        )
        .replace(
            "struct RawParams",
            "a mapping of the ten parameters and others",
        );
    let at = if path.is_empty() {
        "the case".to_string()
    } else {
        format!("`{}`", path.join("."))
    };
    if message.starts_with("unknown field") {
        let inference_key = ["`run_dir`", "`run_export`", "`run_example_"]
            .iter()
            .any(|k| message.starts_with(&format!("unknown field {k}")));
        let hint = if path.first().is_some_and(|p| p == "params") {
            "; put the model's own flags under `params.others`"
        } else if path.len() <= 1 && inference_key {
            "; a training case keeps run_dir under `desc`, a TecoInference case has run_dir and its stages (run_export, run_example_*) at the top and no desc or params"
        } else {
            ""
        };
        format!("{at}: {message}{hint}")
    } else {
        format!("{at}: {message}")
    }
}
