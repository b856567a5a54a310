//! The custom-op inventory (issue #39 item 1) on a fixture project in the shapes of
//! Deformable-DETR's `models/ops` (setup.py with glob sources, `PYBIND11_MODULE(TORCH_EXTENSION_NAME)`,
//! an autograd Function over the extension and its pure-PyTorch twin), a `TORCH_LIBRARY`
//! namespace and a `cpp_extension.load(...)` bound to a variable.

use modelzoo_testkit::copy_dir;
use std::path::{Path, PathBuf};

use migrate::custom_ops::{self, CustomOps};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/custom_ops")
}

fn ops() -> CustomOps {
    custom_ops::find(&fixture())
}

#[test]
fn the_extension_is_named_by_its_build_with_its_ops_sources_and_kernels() {
    let ops = ops();
    let names: Vec<&str> = ops.extensions.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    let sa = ops
        .extensions
        .iter()
        .find(|e| e.name == "SamplingAttention")
        .unwrap_or_else(|| panic!("SamplingAttention not found: {names:?}"));
    assert_eq!(sa.registration, "pybind11");
    let built = sa.built_at.as_ref().expect("built by setup.py");
    assert_eq!(built.path, Path::new("models/ops/setup.py"));
    assert_eq!(built.line, 16);
    let ops_named: Vec<&str> = sa.ops.iter().map(|o| o.name.as_str()).collect();
    // The PYBIND11_MODULE in a comment registers nothing.
    assert_eq!(
        ops_named,
        ["sampling_attn_forward", "sampling_attn_backward"]
    );
    assert_eq!(sa.ops[0].at.path, Path::new("models/ops/src/vision.cpp"));
    assert_eq!(sa.ops[0].at.line, 5);
    // glob sources: every C++/CUDA file under the build's directory.
    assert_eq!(sa.sources.len(), 4, "{:?}", sa.sources);
    assert_eq!(sa.cuda_kernels, 2);
}

#[test]
fn a_torch_library_namespace_and_a_load_call_are_extensions_too() {
    let ops = ops();
    let rotary = ops
        .extensions
        .iter()
        .find(|e| e.name == "torch.ops.rotary")
        .expect("TORCH_LIBRARY(rotary, m)");
    assert_eq!(rotary.registration, "torch-library");
    let named: Vec<&str> = rotary.ops.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(named, ["rotary::rotate", "rotary::rotate_backward"]);
    assert_eq!(rotary.dispatch_keys, ["CUDA"]);
    assert!(rotary.built_at.is_none());

    let fused = ops
        .extensions
        .iter()
        .find(|e| e.name == "fused_bias_act")
        .expect("load(name=\"fused_bias_act\", sources=[...])");
    assert_eq!(
        fused.built_at.as_ref().unwrap().path,
        Path::new("rotary/ops.py")
    );
    assert_eq!(
        fused.sources,
        [
            PathBuf::from("rotary/fused.cpp"),
            PathBuf::from("rotary/fused_kernel.cu")
        ]
    );
    assert_eq!(fused.ops[0].name, "fused_bias_act");
    assert_eq!(fused.cuda_kernels, 1);
}

#[test]
fn the_wrapper_its_calls_its_call_site_and_its_twin_are_found() {
    let ops = ops();
    let w = ops
        .wrappers
        .iter()
        .find(|w| w.class == "SamplingAttnFunction")
        .expect("the autograd Function over SamplingAttention");
    assert_eq!(
        w.target,
        "models.ops.functions.sampling_attn_func:SamplingAttnFunction"
    );
    assert_eq!(w.extension, "SamplingAttention");
    // SA.not_a_call in the docstring is not a call.
    assert_eq!(w.calls, ["sampling_attn_backward", "sampling_attn_forward"]);
    assert_eq!(w.call_sites.len(), 1, "{:?}", w.call_sites);
    assert_eq!(
        w.call_sites[0].path,
        Path::new("models/ops/modules/sampling_attn.py")
    );
    assert_eq!(w.call_sites[0].line, 12);
    let twin = w.twin.as_ref().expect("the pure-PyTorch twin");
    assert_eq!(
        twin.target,
        "models.ops.functions.sampling_attn_func:sampling_attn_core_pytorch"
    );
    // A Module with `.apply_` is no wrapper; the TORCH_LIBRARY one is.
    let classes: Vec<&str> = ops.wrappers.iter().map(|w| w.class.as_str()).collect();
    assert_eq!(classes, ["SamplingAttnFunction", "Rotate"]);
    let rotate = &ops.wrappers[1];
    assert_eq!(rotate.extension, "torch.ops.rotary");
    assert_eq!(rotate.calls, ["rotary::rotate", "rotary::rotate_backward"]);
    assert!(rotate.twin.is_none());
}

#[test]
fn the_migration_report_lists_them_in_markdown_and_json() {
    let report = migrate::scan(&fixture()).expect("scan");
    let md = migrate::render_markdown(&report);
    assert!(md.contains("## Custom ops"), "{md}");
    assert!(
        md.contains("| `SamplingAttention` | pybind11 | `models/ops/setup.py:16` | 4 | 2 |"),
        "{md}"
    );
    assert!(
        md.contains("`models.ops.functions.sampling_attn_func:sampling_attn_core_pytorch`"),
        "{md}"
    );
    let json: serde_json::Value = serde_json::from_str(&migrate::render_json(&report)).unwrap();
    assert_eq!(
        json["custom_ops"]["wrappers"][0]["class"],
        "SamplingAttnFunction"
    );
    assert_eq!(
        json["custom_ops"]["extensions"].as_array().map(Vec::len),
        Some(3)
    );
}

#[test]
fn a_project_without_extensions_has_no_section() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("train.py"),
        "import torch\nx = torch.load('m.pth')\n",
    )
    .unwrap();
    let report = migrate::scan(tmp.path()).unwrap();
    assert!(report.custom_ops.is_empty());
    assert!(!migrate::render_markdown(&report).contains("Custom ops"));
    assert!(!migrate::render_json(&report).contains("custom_ops"));
}

#[test]
fn a_written_migration_records_them_in_migration_md() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    copy_dir(&fixture(), &dir);
    let report = migrate::scan(&dir).unwrap();
    migrate::write(&report).unwrap();
    let md = std::fs::read_to_string(dir.join(migrate::RECORD_FILE)).unwrap();
    assert!(md.contains("## Custom ops"), "{md}");
    assert!(md.contains("`torch.ops.rotary`"), "{md}");
}
