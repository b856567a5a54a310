//! run_vit's model against torchvision's: torchvision's `vit_b_16` (and the `vit_tiny` sizes,
//! built with torchvision's `VisionTransformer` class) with a fixed seed, saved as a
//! safetensors state dict by tests/vit_reference.py with an input batch and torchvision's fp32
//! logits; run_vit's model loads the state dict by name and must give the same logits.
//!
//! Tolerance: max |logits − torchvision's| ≤ 1e-5 in fp32 (the two run the same libtorch
//! kernels but not always in the same order: float rounding only).

mod common;

use std::path::Path;

use common::reference;
use modelzoo_vit::{load_safetensors, LoadError, Variant, ViT};
use tch::nn::{self, ModuleT};
use tch::{Kind, Tensor};

const TOLERANCE: f64 = 1e-5;

/// Build `variant`, load `dir/weights.safetensors`, compare with `dir/io.safetensors`.
fn max_diff(dir: &Path, variant: Variant, image_size: i64, num_classes: i64) -> f64 {
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let net = ViT::new(&vs.root(), variant, image_size, num_classes).unwrap();
    let n =
        load_safetensors(&vs, &dir.join("weights.safetensors")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(n, vs.variables().len());
    let io: std::collections::HashMap<String, Tensor> =
        Tensor::read_safetensors(dir.join("io.safetensors"))
            .unwrap()
            .into_iter()
            .collect();
    let got = tch::no_grad(|| net.forward_t(&io["input"], false));
    let want = &io["logits"];
    assert_eq!(got.size(), want.size());
    assert_eq!(got.kind(), Kind::Float);
    // The logits are not trivial (the noise reference adds makes the head non-zero).
    assert!(want.abs().max().double_value(&[]) > 0.01);
    (got - want).abs().max().double_value(&[])
}

#[test]
fn vit_b_16_logits_match_torchvision_within_1e_5() {
    let dir = tempfile::tempdir().unwrap();
    let out = reference(&[
        dir.path().to_str().unwrap(),
        "--model",
        "vit_b_16",
        "--batch",
        "2",
    ]);
    assert!(out.contains("\"parameters\": 86567656"), "{out}");
    let d = max_diff(dir.path(), Variant::ViTB16, 224, 1000);
    eprintln!("vit_b_16: max |logits - torchvision's| = {d:e}");
    assert!(d <= TOLERANCE, "vit_b_16: max |diff| {d:e} > {TOLERANCE:e}");
}

#[test]
fn vit_tiny_logits_match_torchvision_within_1e_5() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        dir.path().to_str().unwrap(),
        "--model",
        "vit_tiny",
        "--image_size",
        "32",
        "--num_classes",
        "10",
        "--batch",
        "4",
    ];
    reference(&args);
    let d = max_diff(dir.path(), Variant::ViTTiny, 32, 10);
    eprintln!("vit_tiny: max |logits - torchvision's| = {d:e}");
    assert!(d <= TOLERANCE, "vit_tiny: max |diff| {d:e} > {TOLERANCE:e}");
}

/// A state dict that does not fit is refused naming the tensor, and the model is unchanged.
#[test]
fn a_missing_or_misshapen_tensor_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let src = nn::VarStore::new(tch::Device::Cpu);
    let _ = ViT::new(&src.root(), Variant::ViTTiny, 32, 10).unwrap();
    let mut named: Vec<(String, Tensor)> = src.variables().into_iter().collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));

    let dst = nn::VarStore::new(tch::Device::Cpu);
    let _ = ViT::new(&dst.root(), Variant::ViTTiny, 32, 10).unwrap();
    let before = dst.variables()["conv_proj.weight"].copy();

    // One tensor left out.
    let missing = dir.path().join("missing.safetensors");
    let kept: Vec<(&str, &Tensor)> = named
        .iter()
        .filter(|(k, _)| k != "encoder.layers.encoder_layer_1.mlp.3.weight")
        .map(|(k, t)| (k.as_str(), t))
        .collect();
    Tensor::write_safetensors(&kept, &missing).unwrap();
    let e = load_safetensors(&dst, &missing).unwrap_err();
    assert!(matches!(e, LoadError::Missing { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("\"encoder.layers.encoder_layer_1.mlp.3.weight\""),
        "{e}"
    );

    // Position embeddings for another image size.
    let shape = dir.path().join("shape.safetensors");
    let wrong = Tensor::zeros([1, 50, 64], (Kind::Float, tch::Device::Cpu));
    let mut all: Vec<(&str, &Tensor)> = named.iter().map(|(k, t)| (k.as_str(), t)).collect();
    for e in all.iter_mut() {
        if e.0 == "encoder.pos_embedding" {
            e.1 = &wrong;
        }
    }
    Tensor::write_safetensors(&all, &shape).unwrap();
    let e = load_safetensors(&dst, &shape).unwrap_err().to_string();
    assert!(
        e.contains(
            "\"encoder.pos_embedding\" has shape [1, 50, 64] but the model needs [1, 17, 64]"
        ) && e.contains("--image_size"),
        "{e}"
    );

    // An extra tensor (another model's state dict).
    let extra = dir.path().join("extra.safetensors");
    let fc = Tensor::zeros([10], (Kind::Float, tch::Device::Cpu));
    let mut all: Vec<(&str, &Tensor)> = named.iter().map(|(k, t)| (k.as_str(), t)).collect();
    all.push(("fc.bias", &fc));
    Tensor::write_safetensors(&all, &extra).unwrap();
    let e = load_safetensors(&dst, &extra).unwrap_err().to_string();
    assert!(e.contains("\"fc.bias\""), "{e}");

    // Not a safetensors file at all.
    let junk = dir.path().join("junk.safetensors");
    std::fs::write(&junk, b"not safetensors").unwrap();
    let e = load_safetensors(&dst, &junk).unwrap_err().to_string();
    assert!(e.contains("cannot read the state dict"), "{e}");

    assert!(
        dst.variables()["conv_proj.weight"].equal(&before),
        "refused loads change nothing"
    );
}
