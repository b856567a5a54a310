//! `modelzoo bench` end to end on the CPU: the real binary driving run_resnet and run_gpt
//! (built next to it: `make test` builds every binary first) through the shipped cases.

use std::path::{Path, PathBuf};
use std::process::Command;

fn modelzoo(args: &[&str]) -> (i32, String, String) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The model binaries the bench runs, beside `modelzoo`.
fn require_model_binaries() {
    let dir = PathBuf::from(env!("CARGO_BIN_EXE_modelzoo"));
    let dir = dir.parent().unwrap();
    for bin in ["run_resnet", "run_gpt"] {
        assert!(
            dir.join(bin).is_file(),
            "{bin} is not built in {}: run `cargo build --release -p modelzoo-resnet -p modelzoo-gpt --bins` first (make test does)",
            dir.display()
        );
    }
}

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn bad_input_exits_2_and_runs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let work_s = work.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--cases", "resnet:rust-tch:cpu:1:1:1", "-o", "momentum=0.5"],
            "`momentum`",
        ),
        (vec!["--cases", "resnet:rust-tch:cpu:1:-1:1"], "nproc -1"),
        (
            vec!["--cases", "t5:rust-tch:cpu:1:1:1"],
            "unknown model `t5`",
        ),
        (
            vec!["--cases", "resnet:rust-tch:MI300:1:1:1"],
            "unknown hardware `MI300`",
        ),
        (
            vec!["--cases", "resnet:rust-tch:A100:1:8:1"],
            "needs a dataset",
        ),
        (
            vec!["--test-conf", "/no/such/test_conf.yaml"],
            "/no/such/test_conf.yaml",
        ),
    ] {
        let mut full = vec!["bench", "--work-dir", work_s];
        full.extend(args.iter().copied());
        let (code, _, stderr) = modelzoo(&full);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(!work.exists(), "nothing may run on bad input");
}

#[test]
fn dry_run_shows_each_parameter_with_its_layer() {
    let (code, stdout, stderr) = modelzoo(&[
        "bench",
        "--dry-run",
        "--cases",
        "resnet:rust-tch:cpu:2:1:1",
        "-o",
        "batch_size=4",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("batch_size = 4  (TestConf)"), "{stdout}");
    assert!(
        stdout.contains("model_name = resnet18  (Vendor)"),
        "{stdout}"
    );
    assert!(stdout.contains("momentum = 0.9  (Base)"), "{stdout}");
    // Two nodes: one launcher per node rank on loopback.
    assert!(stdout.contains("--nnode 2 --node_rank 0"), "{stdout}");
    assert!(stdout.contains("--nnode 2 --node_rank 1"), "{stdout}");
}

/// A dry-run command pastes as it prints: a path with a space stays one argument and the
/// output dir is where round 1 would write.
#[test]
fn dry_run_commands_are_shell_quoted() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("my data");
    std::fs::create_dir(&data).unwrap();
    let work = tmp.path().join("bench work");
    let (code, stdout, stderr) = modelzoo(&[
        "bench",
        "--dry-run",
        "--work-dir",
        work.to_str().unwrap(),
        "--cases",
        "resnet:rust-tch:cpu:1:1:1",
        "-o",
        &format!("data_dir={}", data.display()),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("run_resnet"))
        .unwrap_or_else(|| panic!("no command line in {stdout}"));
    let argv = shlex::split(line).unwrap_or_else(|| panic!("not shell syntax: {line}"));
    let after = |flag: &str| {
        let i = argv.iter().position(|a| a == flag).unwrap();
        std::path::PathBuf::from(&argv[i + 1])
    };
    assert_eq!(after("--dataset_path"), data, "{line}");
    assert!(
        after("--output_dir").starts_with(&work)
            && after("--output_dir").ends_with("round1/output"),
        "{line}"
    );
    assert!(!work.exists(), "a dry run creates nothing");
}

/// The "done when": 1x1 (2 rounds), 1x2, two nodes on loopback and a gpt case on the
/// CPU, every field, the tables; a crashed case recorded with its log tail while the rest run.
#[test]
fn cpu_cases_run_with_every_field_and_the_results_table() {
    require_model_binaries();
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let conf = tmp.path().join("test_conf.yaml");
    std::fs::write(
        &conf,
        "cases:\n  \"resnet:rust-tch:cpu:1:1:2\": \"\"\n  \"resnet:rust-tch:cpu:1:2:1\": \"\"\n  \"resnet:rust-tch:cpu:2:1:1\": \"\"\n  \"gpt:rust-tch:cpu:1:1:1\": \"\"\n",
    )
    .unwrap();
    let (code, stdout, stderr) = modelzoo(&[
        "bench",
        "--test-conf",
        conf.to_str().unwrap(),
        "--work-dir",
        work.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let results = json(&work.join("results.json"));
    let cases = results["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for c in cases {
        for r in c["rounds"].as_array().unwrap() {
            let dir = PathBuf::from(r["dir"].as_str().unwrap());
            let i = json(&dir.join("finished_info.json"));
            let f = |k: &str| {
                i[k].as_f64()
                    .unwrap_or_else(|| panic!("{k} missing in {i}"))
            };
            assert!(
                f("e2e_time") > f("raw_train_time") && f("raw_train_time") > 0.0,
                "{i}"
            );
            assert!(
                f("p_core") >= f("p_train") && f("p_train") >= f("p_whole") && f("p_whole") > 0.0,
                "{i}"
            );
            assert!(
                f("init_time") > 0.0 && f("mem_used") > 0.0 && f("mem_total") > f("mem_used"),
                "{i}"
            );
            assert_eq!(
                f("world_size") as u64,
                i["nnodes"].as_u64().unwrap() * i["nproc"].as_u64().unwrap()
            );
            assert!(
                i["converged"].is_boolean() && i["precision"] == "fp32",
                "{i}"
            );
            assert!(f("global_batch") > 0.0, "{i}");
            let log = std::fs::read_to_string(
                std::fs::read_dir(dir.join("output"))
                    .unwrap()
                    .flatten()
                    .map(|e| e.path())
                    .find(|p| p.to_string_lossy().ends_with("_log.json"))
                    .unwrap(),
            )
            .unwrap();
            for event in [
                "INIT_START",
                "INIT_END",
                "TRAIN_START",
                "TRAIN_END",
                "FINISHED",
            ] {
                assert!(
                    log.contains(&format!("\"step\": \"{event}\"")),
                    "no {event} record"
                );
            }
            if i["model"] == "gpt" {
                let mfu = f("mfu");
                assert!(mfu > 0.0 && mfu <= 100.0, "{i}");
                assert!(i["mfu_peak"]["source"]
                    .as_str()
                    .unwrap()
                    .contains("measured by the run"));
                assert!(f("final_loss").is_finite() && f("flops_per_item") > 2.0 * f("num_params"));
            } else {
                assert!(f("final_accuracy") >= 0.0, "{i}");
                assert!(i["mfu"].is_null());
            }
        }
    }
    let one = cases
        .iter()
        .find(|c| c["case"] == "resnet:rust-tch:cpu:1x1")
        .unwrap();
    assert_eq!(one["rounds"].as_array().unwrap().len(), 2);
    for c in ["resnet:rust-tch:cpu:1x2", "resnet:rust-tch:cpu:2x1"] {
        let eff = cases.iter().find(|x| x["case"] == c).unwrap()["scaling_efficiency"].as_f64();
        assert!(eff.is_some_and(|e| e > 0.0), "{c}: {eff:?}");
    }
    let md = std::fs::read_to_string(work.join("results.md")).unwrap();
    assert!(md.contains("| resnet:rust-tch:cpu:1x1 | 2/2 |"), "{md}");
    assert!(md.contains("| gpt:rust-tch:cpu:1x1 | 1/1 |"), "{md}");
    let csv = std::fs::read_to_string(work.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 5);
    assert!(std::fs::read_to_string(work.join("p_whole.svg"))
        .unwrap()
        .contains("<svg"));
    let overhead = results["bench_overhead_pct"].as_f64().unwrap();
    assert!(
        overhead < 2.0,
        "bench overhead {overhead} % of the runs' time"
    );
}

#[test]
fn a_crashed_round_is_recorded_with_its_log_tail_and_the_rest_still_run() {
    require_model_binaries();
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    // resnet's dataset is an empty folder: run_resnet refuses it (exit 2) in every round.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let conf = tmp.path().join("test_conf.yaml");
    std::fs::write(
        &conf,
        format!(
            "cases:\n  \"resnet:rust-tch:cpu:1:1:2\": {}\n  \"gpt:rust-tch:cpu:1:1:1\": \"\"\n",
            empty.display()
        ),
    )
    .unwrap();
    let (code, stdout, stderr) = modelzoo(&[
        "bench",
        "--test-conf",
        conf.to_str().unwrap(),
        "--work-dir",
        work.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let results = json(&work.join("results.json"));
    let cases = results["cases"].as_array().unwrap();
    let resnet = cases.iter().find(|c| c["model"] == "resnet").unwrap()["rounds"]
        .as_array()
        .unwrap();
    assert_eq!(resnet.len(), 2, "every round ran");
    for r in resnet {
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .contains("exited with status 2"),
            "{r}"
        );
        assert!(
            r["log_tail"]
                .as_str()
                .unwrap()
                .contains(empty.to_str().unwrap()),
            "{r}"
        );
        let dir = PathBuf::from(r["dir"].as_str().unwrap());
        assert!(dir.join("failure.json").is_file());
        assert!(!dir.join("finished_info.json").exists());
    }
    let gpt = cases.iter().find(|c| c["model"] == "gpt").unwrap();
    assert!(
        gpt["rounds"][0]["info"]["p_whole"].as_f64().unwrap() > 0.0,
        "{gpt}"
    );
    let md = std::fs::read_to_string(work.join("results.md")).unwrap();
    assert!(
        md.contains("## Failed rounds") && md.contains("| gpt:rust-tch:cpu:1x1 | 1/1 |"),
        "{md}"
    );
}
