//! `modelzoo diff` end to end: dumps written by the Python probe (`python/modelzoo_probe`,
//! run with the project's .venv torch) of a tiny conv+linear net's training step, diffed by
//! the binary — on the CPU and on the SDAA emulator, whose SDAA_EMU_PERTURB injects the error
//! the advisor must name; and the probe's own unittest suite.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python(args: &[&str]) -> Output {
    python_with(args, &[])
}

fn python_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let root = root();
    let out = Command::new(modelzoo_testkit::venv_python())
        .args(["-W", "ignore"])
        .args(args)
        .env(
            "PYTHONPATH",
            format!(
                "{}:{}",
                root.join("python").display(),
                root.join("python/tests").display()
            ),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(env.iter().copied())
        .output()
        .expect("run .venv/bin/python");
    assert!(
        out.status.success(),
        "python {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn tiny_step(dir: &Path, extra: &[&str]) {
    tiny_step_with(dir, extra, &[]);
}

fn tiny_step_with(dir: &Path, extra: &[&str], env: &[(&str, &str)]) {
    let script = root().join("python/tests/tiny_step.py");
    let mut args = vec![script.to_str().unwrap(), dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    python_with(&args, env);
}

/// The step on the SDAA emulator, `perturb` as SDAA_EMU_PERTURB (none when empty).
fn tiny_step_on_emulator(dir: &Path, perturb: &str) {
    let home = root().join("target/sdaa-emulator");
    assert!(
        home.join("lib64/libtorch_sdaa.so").is_file(),
        "the SDAA emulator is not built: run `make build`"
    );
    // One device: libtorch starts an autograd thread per device index, and an idle one still
    // waiting for the GIL when Python finalizes can abort the process at exit.
    let mut env = vec![
        ("SDAA_HOME", home.to_str().unwrap()),
        ("SDAA_EMULATOR_DEVICES", "1"),
    ];
    if !perturb.is_empty() {
        env.push(("SDAA_EMU_PERTURB", perturb));
    }
    tiny_step_with(dir, &["--device", "sdaa"], &env);
}

/// `first_divergence` of `modelzoo diff --json` of two dumps that must differ (exit 1).
fn first_divergence(baseline: &Path, candidate: &Path) -> Value {
    let out = modelzoo(&[
        "diff",
        "--baseline",
        s(baseline),
        "--candidate",
        s(candidate),
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    summary["first_divergence"].clone()
}

fn modelzoo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(args)
        .output()
        .expect("run modelzoo")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn probe_dumps_diff_clean_and_a_perturbed_weight_is_named() {
    let t = tempfile::tempdir().unwrap();
    let (a, b, bad) = (t.path().join("a"), t.path().join("b"), t.path().join("bad"));
    tiny_step(&a, &[]);
    tiny_step(&b, &[]);
    tiny_step(&bad, &["--perturb-conv2"]);

    let out = modelzoo(&["diff", "--baseline", s(&a), "--candidate", s(&b)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("PASS"), "{stdout}");

    let report = t.path().join("report");
    let out = modelzoo(&[
        "diff",
        "--baseline",
        s(&a),
        "--candidate",
        s(&bad),
        "--report-dir",
        s(&report),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let summary: Value =
        serde_json::from_str(&fs::read_to_string(report.join("summary.json")).unwrap()).unwrap();
    let first = &summary["first_divergence"];
    assert_eq!(first["op"], "aten::convolution", "{first}");
    assert_eq!(first["call"], 1, "{first}");
    assert_eq!(
        first["key"], "aten::convolution#1.forward.input.1",
        "{first}"
    );
    assert_eq!(first["scope"], "conv2", "{first}");
    assert!(first["cosine"].as_f64().unwrap() < 0.9, "{first}");
    assert!(
        stdout.contains("first divergence: aten::convolution#1.forward.input.1"),
        "{stdout}"
    );
    for f in ["report.md", "report.html", "records.csv"] {
        assert!(report.join(f).is_file(), "{f}");
    }

    // Stats-only dumps name the same record.
    let (sa, sbad) = (t.path().join("sa"), t.path().join("sbad"));
    tiny_step(&sa, &["--tensors", "stats"]);
    tiny_step(&sbad, &["--tensors", "stats", "--perturb-conv2"]);
    let out = modelzoo(&[
        "diff",
        "--baseline",
        s(&sa),
        "--candidate",
        s(&sbad),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        summary["first_divergence"]["key"],
        "aten::convolution#1.forward.input.1"
    );

    // An fp64 run of the same step arbitrates: the unperturbed candidate is as close to it as
    // the baseline, so it passes.
    let r = t.path().join("ref");
    tiny_step(&r, &["--dtype", "float64"]);
    let out = modelzoo(&[
        "diff",
        "--baseline",
        s(&a),
        "--candidate",
        s(&b),
        "--reference",
        s(&r),
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(summary["records"][0]["reference"]["ratio"]
        .as_f64()
        .is_some());
    // The perturbed candidate is judged against it too: far more than 2× the baseline's error.
    let out = modelzoo(&[
        "diff",
        "--baseline",
        s(&a),
        "--candidate",
        s(&bad),
        "--reference",
        s(&r),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = &summary["first_divergence"];
    assert_eq!(
        first["key"], "aten::convolution#1.forward.input.1",
        "{first}"
    );
    assert!(
        first["reference"]["ratio"].as_f64().unwrap() > 2.0,
        "{first}"
    );
}

/// The ground truth of issue #15: the emulator computes one op call wrong (SDAA_EMU_PERTURB),
/// and `modelzoo diff` against a CPU dump names exactly that op and call as the first
/// divergence, forward or backward; unperturbed, the emulator's dump diffs clean.
#[test]
fn the_op_the_emulator_perturbs_is_named_as_the_first_divergence() {
    let t = tempfile::tempdir().unwrap();
    let cpu = t.path().join("cpu");
    tiny_step(&cpu, &[]);

    let clean = t.path().join("clean");
    tiny_step_on_emulator(&clean, "");
    let out = modelzoo(&["diff", "--baseline", s(&cpu), "--candidate", s(&clean)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");

    let forward = t.path().join("forward");
    tiny_step_on_emulator(&forward, "aten::convolution#1:bias=0.5");
    let first = first_divergence(&cpu, &forward);
    assert_eq!(
        first["key"], "aten::convolution#1.forward.output.0",
        "{first}"
    );
    assert_eq!(first["op"], "aten::convolution", "{first}");
    assert_eq!(first["call"], 1, "{first}");
    assert_eq!(first["scope"], "conv2", "{first}");

    let backward = t.path().join("backward");
    tiny_step_on_emulator(&backward, "aten::convolution_backward#0:bias=0.5");
    let first = first_divergence(&cpu, &backward);
    assert_eq!(first["op"], "aten::convolution_backward", "{first}");
    assert_eq!(first["call"], 0, "{first}");
    assert_eq!(first["phase"], "backward", "{first}");
    assert_eq!(first["scope"], "conv2", "{first}");
    assert!(
        first["key"]
            .as_str()
            .unwrap()
            .starts_with("aten::convolution_backward#0.backward.output."),
        "{first}"
    );
}

#[test]
fn unusable_input_exits_2_with_the_reason() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    tiny_step(&a, &["--tensors", "stats"]);
    let empty = t.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let out = modelzoo(&["diff", "--baseline", s(&a), "--candidate", s(&empty)]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a dump"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The Python suite (python/tests: the probe, the dllogger API, torch_sdaa, port's shim, ...)
/// in `PY_SHARDS` processes, one test each, so that it runs on both cores beside this file's
/// other tests: as one `unittest discover` it took ~70 s, the longest test of `make test`.
/// Shard i runs every `PY_SHARDS`-th test class in name order from the i-th (a class, with its
/// setUpClass, stays in one process): together the shards run every class of the discovery
/// once, a module that fails to import included (unittest's `_FailedTest` is a class too).
const PY_SHARDS: usize = 3;

const PY_SHARD: &str = r#"
import sys, unittest
shard, shards, start = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def cases(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from cases(t)
        else:
            yield t
by_class = {}
for t in cases(unittest.defaultTestLoader.discover(start)):
    by_class.setdefault(type(t).__module__ + "." + type(t).__qualname__, []).append(t)
names = sorted(by_class)[shard::shards]
suite = unittest.TestSuite(t for n in names for t in by_class[n])
print(f"shard {shard} of {shards}: {len(names)} classes of {len(by_class)}", file=sys.stderr)
ok = unittest.TextTestRunner().run(suite).wasSuccessful()
sys.exit(0 if ok and suite.countTestCases() > 0 else 1)
"#;

fn python_suite_shard(shard: usize) {
    let (i, n) = (shard.to_string(), PY_SHARDS.to_string());
    let start = root().join("python/tests");
    let out = python(&["-c", PY_SHARD, &i, &n, s(&start)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\nOK"), "{stderr}");
}

#[test]
fn python_suite_shard_0_passes() {
    python_suite_shard(0);
}

#[test]
fn python_suite_shard_1_passes() {
    python_suite_shard(1);
}

#[test]
fn python_suite_shard_2_passes() {
    python_suite_shard(2);
}

/// `modelzoo op check` (docs/op.md) with the fixtures of python/tests/test_opcheck.py (whose
/// unittests, run by `python_suite_shard_*`, cover the harness case by case), from that
/// directory so `test_opcheck` resolves as a porter's own module would.
fn op_check(args: &[&str], repro: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(["op", "check", "--ref", "test_opcheck:ref_op"])
        .args(["--inputs", "test_opcheck:cases", "--repro-dir", s(repro)])
        .args(args)
        .current_dir(root().join("python/tests"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("PYTHONPATH")
        .output()
        .expect("run modelzoo op check")
}

/// The one end-to-end proof: a right implementation passes on the emulated sdaa, forward and
/// backward, contiguous and not (exit 0, --json written); one off by 1e-3 in a region of its
/// forward fails on the CPU (exit 1) naming the rows and writing a repro script.
#[test]
fn op_check_passes_a_right_op_on_the_emulated_sdaa_and_fails_a_wrong_one() {
    modelzoo_testkit::emulator_home();
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("check.json");
    let out = op_check(
        &[
            "--impl",
            "test_opcheck:impl_right",
            "--device",
            "sdaa",
            "--backward",
            "--json",
            s(&json),
        ],
        &tmp.path().join("repro"),
    );
    let text = modelzoo_testkit::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("SDAA EMULATOR"), "{text}");
    let r: Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["device"], "sdaa");
    assert_eq!(r["pass"], true);
    let rows = r["rows"].as_array().unwrap();
    for want in ["out", "grad:arg0", "grad:arg1"] {
        for layout in ["contiguous", "non-contiguous"] {
            assert!(
                rows.iter().any(|x| x["tensor"] == want
                    && x["layout"] == layout
                    && x["verdict"] == "pass"),
                "{want} {layout}: {text}"
            );
        }
    }

    let out = op_check(
        &[
            "--impl",
            "test_opcheck:impl_forward_wrong",
            "--device",
            "cpu",
        ],
        &tmp.path().join("repro"),
    );
    let text = modelzoo_testkit::output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL wide float32 contiguous out: ")
            && text.contains("relative error > 0.000488"),
        "{text}"
    );
    let script = tmp.path().join("repro/repro_wide_float32.py");
    assert!(text.contains(s(&script)), "{text}");
    assert!(script.is_file());
}

/// What keeps the check from running exits 2 and names it: a module that does not import, a
/// Python that is not there, a dtype it does not know.
#[test]
fn op_check_that_cannot_run_exits_2_naming_why() {
    let tmp = tempfile::tempdir().unwrap();
    let repro = tmp.path().join("repro");
    let out = op_check(&["--impl", "no_such_module:op", "--device", "cpu"], &repro);
    let text = modelzoo_testkit::output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--impl no_such_module:op: cannot import module `no_such_module`"),
        "{text}"
    );
    let out = op_check(
        &[
            "--impl",
            "test_opcheck:impl_right",
            "--python",
            "/nonexistent/python3",
        ],
        &repro,
    );
    let text = modelzoo_testkit::output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("cannot run `/nonexistent/python3`"), "{text}");
    let out = op_check(
        &[
            "--impl",
            "test_opcheck:impl_right",
            "--dtypes",
            "float32,float8",
        ],
        &repro,
    );
    let text = modelzoo_testkit::output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("unknown dtype `float8`"), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(!repro.exists());
}
