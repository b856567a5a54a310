//! `run_resnet --dump`: the real binary writes a precision dump (docs/diff.md) that says what
//! ran — forward and backward, keyed per op call, with scopes and statistics that match the
//! tensors — refuses to overwrite one, runs the fp64 arbiter, and on the SDAA emulator with an
//! injected error shows exactly the perturbed call diverging.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

use common::{emulator_home, text, BIN};
use serde_json::Value;

/// resnet18 at 32 px, batch 4, two steps, dumping into `dump`.
fn dump_run(out: &Path, dump: &Path, extra: &[&str], sdaa: Option<&str>) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "--model_name",
        "resnet18",
        "--num_classes",
        "10",
        "--image_size",
        "32",
        "--batch_size",
        "4",
        "--synthetic_samples",
        "16",
        "--num_workers",
        "1",
        "--step",
        "2",
    ])
    .arg("--output_dir")
    .arg(out)
    .arg("--dump")
    .arg(dump)
    .args(extra)
    .env("RUST_LOG", "warn");
    if let Some(perturb) = sdaa {
        cmd.args(["--device", "sdaa"])
            .env("SDAA_HOME", emulator_home())
            .env("SDAA_EMU_PERTURB", perturb)
            .env_remove("TECO_HOME")
            .env_remove("SDAA_TORCH_PLUGIN");
    }
    cmd.output().expect("run_resnet starts")
}

fn records(step_dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(step_dir.join("records.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn meta(step_dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(step_dir.join("meta.json")).unwrap()).unwrap()
}

fn s<'a>(r: &'a Value, k: &str) -> &'a str {
    r[k].as_str().unwrap_or_else(|| panic!("{k} of {r}"))
}

/// The data of a .npy file as float64, with its descr and the raw data bytes.
fn read_npy(path: &Path) -> (String, Vec<f64>, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "{}", path.display());
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + hlen]).unwrap();
    assert_eq!((10 + hlen) % 64, 0, "header padded to 64: {header:?}");
    let descr = header.split('\'').nth(3).unwrap().to_string();
    let data = bytes[10 + hlen..].to_vec();
    let values = match descr.as_str() {
        "<f4" => data
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        "<f8" => data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        "<i8" => data
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        other => panic!("unexpected descr {other} in {}", path.display()),
    };
    (descr, values, data)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-30) + 1e-12
}

#[test]
fn a_cpu_dump_records_forward_and_backward_ops_whose_stats_match_the_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump");
    let o = dump_run(
        &dir.path().join("out"),
        &dump,
        &["--dump_tensors", "full"],
        None,
    );
    assert!(o.status.success(), "{}", text(&o));
    let step = dump.join("rank0/step1");
    let m = meta(&step);
    assert_eq!(m["format"], "modelzoo-dump");
    assert_eq!(m["version"], 1);
    assert_eq!(m["framework"], "modelzoo");
    assert_eq!(m["model"], "resnet18");
    assert_eq!((m["step"].as_u64(), m["rank"].as_u64()), (Some(1), Some(0)));
    assert_eq!((s(&m, "level"), s(&m, "tensors")), ("op", "full"));
    assert_eq!((s(&m, "dtype"), s(&m, "device")), ("float32", "cpu"));
    assert!(s(&m, "torch_version").starts_with("2.11"));

    let recs = records(&step);
    // Keys spell the record; each op's calls are numbered 0, 1, ... in execution order.
    let mut next_call: HashMap<String, u64> = HashMap::new();
    let mut last: Option<(String, u64)> = None;
    for r in &recs {
        let key = format!(
            "{}#{}.{}.{}.{}",
            s(r, "op"),
            r["call"],
            s(r, "phase"),
            s(r, "io"),
            r["index"]
        );
        assert_eq!(s(r, "key"), key);
        let (op, call) = (s(r, "op").to_string(), r["call"].as_u64().unwrap());
        if last.as_ref() != Some(&(op.clone(), call)) {
            let expected = next_call.entry(op.clone()).or_insert(0);
            assert_eq!(call, *expected, "call index of {key}");
            *expected += 1;
            last = Some((op, call));
        }
    }
    let outs = |op: &str, phase: &str| -> Vec<&Value> {
        recs.iter()
            .filter(|r| s(r, "op") == op && s(r, "phase") == phase && s(r, "io") == "output")
            .filter(|r| r["index"] == 0)
            .collect()
    };
    // resnet18: 20 convolutions and 17 ReLUs each way; only the outermost op is recorded.
    assert_eq!(outs("aten::conv2d", "forward").len(), 20);
    assert_eq!(outs("aten::relu", "forward").len(), 17);
    assert_eq!(outs("aten::convolution_backward", "backward").len(), 20);
    assert_eq!(outs("aten::threshold_backward", "backward").len(), 17);
    assert!(recs
        .iter()
        .all(|r| !s(r, "op").contains("_convolution") && s(r, "op") != "aten::convolution"));
    // Scopes are the var-store paths; backward ops carry their forward op's.
    let conv_scopes: Vec<&str> = outs("aten::conv2d", "forward")
        .iter()
        .map(|r| s(r, "scope"))
        .collect();
    assert_eq!(conv_scopes[0], "conv1");
    assert_eq!(conv_scopes[1], "layer1.0.conv1");
    assert!(conv_scopes.contains(&"layer2.0.downsample.0"));
    assert_eq!(s(outs("aten::linear", "forward")[0], "scope"), "fc");
    let back_scopes: Vec<&str> = outs("aten::convolution_backward", "backward")
        .iter()
        .map(|r| s(r, "scope"))
        .collect();
    assert_eq!(
        back_scopes[0], "layer4.1.conv2",
        "backward runs last layer first"
    );
    assert!(back_scopes.contains(&"conv1"));

    // Statistics and checksums are those of the tensors written.
    let mut checked = 0;
    for r in &recs {
        let (descr, v, data) = read_npy(&step.join(s(r, "file")));
        let n: u64 = r["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .product();
        assert_eq!(v.len() as u64, n, "{}", s(r, "key"));
        if descr != "<f4" || v.is_empty() {
            continue;
        }
        assert_eq!(
            s(r, "checksum"),
            format!("crc32:{:08x}", crc32fast::hash(&data))
        );
        let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let max = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = finite.iter().sum::<f64>() / finite.len() as f64;
        let l2 = finite.iter().map(|x| x * x).sum::<f64>().sqrt();
        let got = |k: &str| r[k].as_f64().unwrap();
        assert!(close(got("min"), min) && close(got("max"), max), "{r}");
        assert!(close(got("mean"), mean) && close(got("l2"), l2), "{r}");
        assert_eq!(r["nan"].as_u64(), Some((v.len() - finite.len()) as u64));
        checked += 1;
    }
    assert!(checked > 500, "only {checked} float32 records checked");

    // A stats dump of the same (deterministic) run computes each tensor once and says the
    // same: every record, statistics and checksum equal the full dump's.
    let stats_dump = dir.path().join("stats");
    let o = dump_run(&dir.path().join("out3"), &stats_dump, &[], None);
    assert!(o.status.success(), "{}", text(&o));
    let stats = records(&stats_dump.join("rank0/step1"));
    assert_eq!(stats.len(), recs.len());
    for (a, b) in recs.iter().zip(&stats) {
        for k in [
            "key", "scope", "min", "max", "mean", "l2", "nan", "checksum",
        ] {
            assert_eq!(a[k], b[k], "{k} of {}", s(a, "key"));
        }
    }

    // A second dump into the same directory is refused, and the first is kept.
    let again = dump_run(&dir.path().join("out2"), &dump, &[], None);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already holds a dump"),
        "{}",
        text(&again)
    );
    assert_eq!(records(&step).len(), recs.len());
}

#[test]
fn the_fp64_arbiter_runs_the_model_in_float64_and_refuses_autocast() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump");
    let o = dump_run(
        &dir.path().join("out"),
        &dump,
        &[
            "--dump_dtype",
            "fp64",
            "--dump_step",
            "2",
            "--dump_level",
            "mix",
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o));
    let step = dump.join("rank0/step2");
    assert_eq!(meta(&step)["dtype"], "float64");
    assert_eq!(meta(&step)["level"], "mix");
    let recs = records(&step);
    // Only the batch arrives in float32 (and is converted by `aten::to`).
    for r in recs.iter().filter(|r| s(r, "op") != "aten::to") {
        assert!(matches!(s(r, "dtype"), "float64" | "int64" | "bool"), "{r}");
    }
    let modules: Vec<&str> = recs
        .iter()
        .filter(|r| s(r, "op").starts_with("module::"))
        .map(|r| s(r, "key"))
        .collect();
    assert!(
        modules.contains(&"module::layer1.0#0.forward.output.0"),
        "{modules:?}"
    );
    assert!(modules.contains(&"module::fc#0.forward.input.0"));

    let refused = dump_run(
        &dir.path().join("out2"),
        &dir.path().join("dump2"),
        &["--dump_dtype", "fp64", "--autocast"],
        None,
    );
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(!dir.path().join("dump2").exists());
}

/// The emulator perturbs the 4th `aten::conv2d` call of the dumped step (`bias=0.5`): the
/// dump shows every record before it bit-identical to the CPU's, and that call's output
/// shifted by exactly 0.5.
#[test]
fn an_injected_error_on_the_emulator_diverges_at_exactly_that_call() {
    let dir = tempfile::tempdir().unwrap();
    let (cpu, sdaa) = (dir.path().join("cpu"), dir.path().join("sdaa"));
    let o = dump_run(&dir.path().join("o1"), &cpu, &[], None);
    assert!(o.status.success(), "{}", text(&o));
    let o = dump_run(
        &dir.path().join("o2"),
        &sdaa,
        &[],
        Some("aten::conv2d#3:bias=0.5"),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(s(&meta(&sdaa.join("rank0/step1")), "device").starts_with("sdaa"));
    let (a, b) = (
        records(&cpu.join("rank0/step1")),
        records(&sdaa.join("rank0/step1")),
    );
    assert_eq!(a.len(), b.len());
    let first = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x["checksum"] != y["checksum"])
        .expect("the perturbed run differs");
    assert_eq!(s(&b[first], "key"), "aten::conv2d#3.forward.output.0");
    assert_eq!(s(&b[first], "scope"), "layer1.1.conv1");
    for k in ["mean", "min", "max"] {
        let d = b[first][k].as_f64().unwrap() - a[first][k].as_f64().unwrap();
        assert!((d - 0.5).abs() < 1e-5, "{k} moved by {d}");
    }
    for (x, y) in a[..first].iter().zip(&b[..first]) {
        assert_eq!(x["key"], y["key"]);
    }
}

#[test]
fn dump_arguments_that_cannot_work_exit_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a_file");
    std::fs::write(&file, "x").unwrap();
    let dump = dir.path().join("d");
    let cases: [(&Path, &[&str], &str); 3] = [
        (&dump, &["--dump_step", "5"], "--dump_step 5"),
        (&file, &[], "cannot create"),
        (
            &dump,
            &["--dump_dtype", "fp64", "--device", "sdaa"],
            "--device cpu",
        ),
    ];
    for (i, (target, extra, says)) in cases.iter().enumerate() {
        let o = dump_run(&dir.path().join(format!("o{i}")), target, extra, None);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{}",
            text(&o)
        );
    }
    let o = Command::new(BIN)
        .args(["--dump_level", "mix", "--output_dir"])
        .arg(dir.path().join("o9"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--dump_level needs --dump DIR"));
    assert!(!dump.join("rank0/step5").exists());
}
