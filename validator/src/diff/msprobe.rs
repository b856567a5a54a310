//! Ascend msprobe's statistics dumps (`dump.json`) read as stats-only dumps, so an adapter
//! who already has msprobe dumps (from an NPU or GPU run) can diff them with `modelzoo diff`.
//!
//! msprobe's documented layout: `{"task": ..., "level": "L0"|"L1", "framework": "pytorch",
//! "data": {"Functional.conv2d.0.forward": {"input_args": [T, ...], "input_kwargs": {...},
//! "output": [T, ...]}, "Module.conv1.Conv2d.forward.0": {...}, "...backward": {"input": [...],
//! "output": [...]}}}` where a tensor T is `{"type": "torch.Tensor", "dtype": "torch.float32",
//! "shape": [...], "Max", "Min", "Mean", "Norm", ...}`. Non-tensor arguments (ints, None) keep
//! their position in the index but make no record; nested lists are flattened.

use std::path::Path;

use serde_json::{Map, Value};

use super::dump::{Dump, Meta, Record, FORMAT, VERSION};
use super::DiffError;

/// Read msprobe's dump.json at `path`.
pub fn load(path: &Path) -> Result<Dump, DiffError> {
    let read_err = |message: String| DiffError::Read {
        path: path.to_path_buf(),
        message,
    };
    let text = super::dump::read_text(path).map_err(read_err)?;
    let root: Root =
        serde_json::from_str(&text).map_err(|e| read_err(format!("not JSON (truncated?): {e}")))?;
    let Some(Ordered(data)) = root.data else {
        return Err(DiffError::NotADump {
            path: path.to_path_buf(),
            why: "a JSON file without msprobe's `data` object (is it a dump.json?)".into(),
        });
    };
    let mut records = Vec::new();
    for (name, entry) in &data {
        let Some((op, call, phase, scope)) = parse_name(name) else {
            tracing::warn!(
                "{}: entry `{name}` has no forward/backward part: skipped",
                path.display()
            );
            continue;
        };
        let Some(entry) = entry.as_object() else {
            continue;
        };
        let base = Proto {
            name,
            op: &op,
            call,
            phase,
            scope: &scope,
        };
        let mut inputs = Vec::new();
        for field in ["input_args", "input"] {
            if let Some(v) = entry.get(field) {
                flatten(v, &mut inputs);
            }
        }
        if let Some(Value::Object(kw)) = entry.get("input_kwargs") {
            for v in kw.values() {
                flatten(v, &mut inputs);
            }
        }
        let mut outputs = Vec::new();
        if let Some(v) = entry.get("output") {
            flatten(v, &mut outputs);
        }
        for (io, list) in [("input", inputs), ("output", outputs)] {
            for (i, t) in list.into_iter().enumerate() {
                if let Some(r) = t.and_then(|t| base.record(io, i as u32, t)) {
                    records.push(r);
                }
            }
        }
    }
    let level = match root.level.as_deref() {
        Some("L0") => "module",
        Some("mix") => "mix",
        _ => "op",
    };
    let meta = Meta {
        format: FORMAT.into(),
        version: VERSION,
        framework: "msprobe".into(),
        model: None,
        step: None,
        rank: None,
        level: level.into(),
        tensors: "stats".into(),
        dtype: None,
        device: None,
        torch_version: None,
    };
    Ok(Dump {
        path: path.to_path_buf(),
        meta,
        records,
    })
}

/// The parts of dump.json read here.
#[derive(serde::Deserialize)]
struct Root {
    level: Option<String>,
    data: Option<Ordered>,
}

/// A JSON object's entries in file order: msprobe writes them in execution order, which the
/// first divergence depends on (serde_json's `Map` sorts keys).
struct Ordered(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("msprobe's `data` object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Ordered, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = m.next_entry()? {
                    v.push(e);
                }
                Ok(Ordered(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// `Functional.conv2d.0.forward` → (`Functional.conv2d`, 0, forward, "");
/// `Module.layer1.0.conv1.Conv2d.forward.0` → (`Module.layer1.0.conv1.Conv2d`, 0, forward,
/// `layer1.0.conv1`).
fn parse_name(name: &str) -> Option<(String, u64, &'static str, String)> {
    let parts: Vec<&str> = name.split('.').collect();
    let at = parts
        .iter()
        .rposition(|p| *p == "forward" || *p == "backward")?;
    let phase = if parts[at] == "forward" {
        "forward"
    } else {
        "backward"
    };
    // Module style: the call index follows the phase; API style: it precedes it.
    if let Some(call) = parts.get(at + 1).and_then(|p| p.parse().ok()) {
        let op = parts[..at].join(".");
        let scope = if parts[0] == "Module" && at >= 3 {
            parts[1..at - 1].join(".")
        } else {
            String::new()
        };
        return Some((op, call, phase, scope));
    }
    let call = parts.get(at.checked_sub(1)?)?.parse().ok()?;
    Some((parts[..at - 1].join("."), call, phase, String::new()))
}

/// Tensor slots in argument order: `None` for an argument that is not a tensor.
fn flatten<'a>(v: &'a Value, out: &mut Vec<Option<&'a Map<String, Value>>>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| flatten(i, out)),
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("torch.Tensor") => {
            out.push(Some(o))
        }
        _ => out.push(None),
    }
}

struct Proto<'a> {
    name: &'a str,
    op: &'a str,
    call: u64,
    phase: &'static str,
    scope: &'a str,
}

impl Proto<'_> {
    fn record(&self, io: &str, index: u32, t: &Map<String, Value>) -> Option<Record> {
        let num = |k: &str| t.get(k).and_then(Value::as_f64);
        let shape = t
            .get("shape")?
            .as_array()?
            .iter()
            .map(Value::as_u64)
            .collect::<Option<Vec<u64>>>()?;
        let dtype = t
            .get("dtype")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .trim_start_matches("torch.")
            .to_string();
        Some(Record {
            key: format!("{}.{io}.{index}", self.name),
            op: self.op.to_string(),
            call: self.call,
            phase: self.phase.to_string(),
            io: io.to_string(),
            index,
            scope: self.scope.to_string(),
            dtype,
            shape,
            min: num("Min"),
            max: num("Max"),
            mean: num("Mean"),
            l2: num("Norm"),
            nan: None,
            inf: None,
            checksum: t
                .get("md5")
                .and_then(Value::as_str)
                .map(|s| format!("md5:{s}")),
            file: None,
        })
    }
}
