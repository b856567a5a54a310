//! Parameter counts of run_vit's models equal torchvision's (`sum(p.numel() for p in
//! model.parameters())` of `torchvision.models.vit_b_16()` etc., torchvision 0.26), and the
//! count the memory check uses (`ViTConfig::parameter_count`) equals the built model's.
//! Names are checked against torchvision's state dict by tests/reference.rs (strict loading).

use modelzoo_vit::{parameter_count, Variant, ViT};
use tch::nn;

fn count(v: Variant, image_size: i64, num_classes: i64) -> i64 {
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let net = ViT::new(&vs.root(), v, image_size, num_classes).unwrap();
    let n = parameter_count(&vs);
    assert_eq!(
        n,
        net.config().parameter_count(image_size, num_classes),
        "{v}: counted from the sizes vs built"
    );
    n
}

#[test]
fn vit_b_16_has_torchvision_parameter_count_and_names() {
    assert_eq!(count(Variant::ViTB16, 224, 1000), 86_567_656);
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let _net = ViT::new(&vs.root(), Variant::ViTB16, 224, 1000).unwrap();
    let vars = vs.variables();
    assert_eq!(
        vars.len(),
        152,
        "torchvision's vit_b_16 state dict has 152 tensors"
    );
    for (name, shape) in [
        ("class_token", vec![1, 1, 768]),
        ("conv_proj.weight", vec![768, 3, 16, 16]),
        ("encoder.pos_embedding", vec![1, 197, 768]),
        (
            "encoder.layers.encoder_layer_0.self_attention.in_proj_weight",
            vec![2304, 768],
        ),
        (
            "encoder.layers.encoder_layer_11.self_attention.out_proj.bias",
            vec![768],
        ),
        (
            "encoder.layers.encoder_layer_5.mlp.0.weight",
            vec![3072, 768],
        ),
        ("encoder.layers.encoder_layer_5.mlp.3.bias", vec![768]),
        ("encoder.layers.encoder_layer_7.ln_2.weight", vec![768]),
        ("encoder.ln.bias", vec![768]),
        ("heads.head.weight", vec![1000, 768]),
    ] {
        let t = vars.get(name).unwrap_or_else(|| panic!("missing {name}"));
        assert_eq!(t.size(), shape, "{name}");
    }
    // torchvision's initialisation: a zero classifier, LayerNorm weight 1, position embeddings
    // N(0, 0.02), conv_proj std sqrt(1 / fan_in).
    let abs_max = |n: &str| vars[n].abs().max().double_value(&[]);
    assert_eq!(abs_max("heads.head.weight"), 0.0);
    assert_eq!(abs_max("class_token"), 0.0);
    let mean = vars["encoder.ln.weight"]
        .mean(tch::Kind::Float)
        .double_value(&[]);
    assert_eq!(mean, 1.0);
    let std = vars["encoder.pos_embedding"].std(true).double_value(&[]);
    assert!((std - 0.02).abs() < 0.001, "pos_embedding std {std}");
    let std = vars["conv_proj.weight"].std(true).double_value(&[]);
    let want = (1.0f64 / 768.0).sqrt();
    assert!(
        (std - want).abs() / want < 0.02,
        "conv_proj std {std} vs {want}"
    );
}

#[test]
fn vit_b_32_has_torchvision_parameter_count() {
    assert_eq!(count(Variant::ViTB32, 224, 1000), 88_224_232);
}

#[test]
fn vit_l_16_has_torchvision_parameter_count() {
    assert_eq!(count(Variant::ViTL16, 224, 1000), 304_326_632);
}

#[test]
fn position_embeddings_follow_the_image_size() {
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let _net = ViT::new(&vs.root(), Variant::ViTB16, 384, 10).unwrap();
    // (384 / 16)^2 patches + the class token.
    assert_eq!(
        vs.variables()["encoder.pos_embedding"].size(),
        [1, 577, 768]
    );
    let e = ViT::new(&(vs.root() / "x"), Variant::ViTB16, 200, 10).unwrap_err();
    assert!(e.to_string().contains("not a multiple"), "{e}");
}
