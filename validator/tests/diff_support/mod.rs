//! Dump directories for the diff tests: records and float32 .npy tensors written into temp
//! dirs in the modelzoo dump format (docs/diff.md).

#![allow(dead_code)] // each test file uses its own subset

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use validator::diff::Options;

/// One tensor of a dump: key parts and values (written as float32, or `descr` bytes).
pub struct T {
    pub op: &'static str,
    pub call: u64,
    pub phase: &'static str,
    pub io: &'static str,
    pub index: u32,
    pub values: Vec<f64>,
}

pub fn t(op: &'static str, call: u64, phase: &'static str, io: &'static str, values: &[f64]) -> T {
    T {
        op,
        call,
        phase,
        io,
        index: 0,
        values: values.to_vec(),
    }
}

pub fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let shape = match shape {
        [n] => format!("({n},)"),
        s => format!(
            "({})",
            s.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let pad = 64 - (10 + dict.len() + 1) % 64;
    let mut h = b"\x93NUMPY\x01\x00".to_vec();
    h.extend_from_slice(&((dict.len() + pad + 1) as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.extend(std::iter::repeat_n(b' ', pad));
    h.push(b'\n');
    h.extend_from_slice(data);
    h
}

pub fn f32_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect()
}

pub fn meta(model: &str, step: u64, tensors: &str, dtype: &str) -> Value {
    json!({"format": "modelzoo-dump", "version": 1, "framework": "pytorch", "model": model,
           "step": step, "rank": 0, "level": "op", "tensors": tensors, "dtype": dtype,
           "device": "cpu", "torch_version": "2.11.0"})
}

/// A dump of `tensors` at `root/rank0/step<step>/`, full tensors and stats; returns the root.
pub fn dump(root: &Path, model: &str, step: u64, tensors: &[T]) -> PathBuf {
    let dir = root.join("rank0").join(format!("step{step}"));
    fs::create_dir_all(dir.join("tensors")).unwrap();
    fs::write(
        dir.join("meta.json"),
        meta(model, step, "full", "float32").to_string(),
    )
    .unwrap();
    let mut lines = String::new();
    for (n, x) in tensors.iter().enumerate() {
        let file = format!("tensors/{n:06}.npy");
        fs::write(
            dir.join(&file),
            npy("<f4", &[x.values.len()], &f32_bytes(&x.values)),
        )
        .unwrap();
        let (min, max, sum, sq) = x.values.iter().fold(
            (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0.0),
            |(a, b, s, q), &v| (a.min(v), b.max(v), s + v, q + v * v),
        );
        let rec = json!({"key": format!("{}#{}.{}.{}.{}", x.op, x.call, x.phase, x.io, x.index),
            "op": x.op, "call": x.call, "phase": x.phase, "io": x.io, "index": x.index,
            "scope": "layer", "dtype": "float32", "shape": [x.values.len()],
            "min": min, "max": max, "mean": sum / x.values.len() as f64, "l2": sq.sqrt(),
            "nan": 0, "inf": 0, "checksum": null, "file": file});
        lines.push_str(&rec.to_string());
        lines.push('\n');
    }
    fs::write(dir.join("records.jsonl"), lines).unwrap();
    root.to_path_buf()
}

pub fn opts(b: &Path, c: &Path) -> Options {
    Options {
        baseline: b.to_path_buf(),
        candidate: c.to_path_buf(),
        ..Options::default()
    }
}

pub fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs().max(1.0))
}
