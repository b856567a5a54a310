//! Parameter counts and names match torchvision's resnet18 / resnet50 exactly.

use modelzoo_resnet::{parameter_count, ResNet, Variant};
use tch::nn;

fn build(v: Variant) -> nn::VarStore {
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let _net = ResNet::new(&vs.root(), v, 1000);
    vs
}

#[test]
fn resnet18_has_torchvision_parameter_count() {
    assert_eq!(parameter_count(&build(Variant::ResNet18)), 11_689_512);
}

#[test]
fn resnet50_has_torchvision_parameter_count_and_names() {
    let vs = build(Variant::ResNet50);
    assert_eq!(parameter_count(&vs), 25_557_032);
    let vars = vs.variables();
    for name in [
        "conv1.weight",
        "bn1.running_mean",
        "layer1.0.downsample.0.weight",
        "layer4.2.bn3.bias",
        "fc.weight",
        "fc.bias",
    ] {
        assert!(vars.contains_key(name), "missing {name}");
    }
    // BN starts at weight 1 / bias 0; conv weights are kaiming-normal fan_out.
    assert_eq!(
        vars["bn1.weight"].mean(tch::Kind::Float).double_value(&[]),
        1.0
    );
    let w = &vars["conv1.weight"];
    let std = w.std(true).double_value(&[]);
    let want = (2.0f64 / (64.0 * 49.0)).sqrt();
    assert!(
        (std - want).abs() / want < 0.05,
        "conv1 std {std} vs {want}"
    );
}
