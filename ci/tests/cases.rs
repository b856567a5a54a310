//! The public ModelZoo's cases, run as its functional check runs them, on a zoo these tests
//! build: a real Python script (torch + the emulator's torch_sdaa + tcap_dllogger) in
//! `PyTorch/contrib/Classification/<Model>/run_scripts/`, started by the kit's `.venv` python
//! in its run_dir with the case's arguments, on the SDAA emulator (no card here).

use std::path::Path;
use std::time::Duration;

use model_config::ZooCases;
use modelzoo_ci::{cases, Options, SdaaBackend, Stage, Status};
use modelzoo_support::kit::Kit;

/// A ModelZoo-style run script: prints its arguments and directory, trains a few steps of
/// nothing on `--device`, and logs tcap_dllogger lines — or fails in the way `--mode` says.
const SCRIPT: &str = r#"
import os, sys
import torch
import torch_sdaa  # noqa: F401 (the SDAA device; the emulator's here)
from tcap_dllogger import Logger, StdOutBackend, Verbosity

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
print("ARGV", " ".join(sys.argv))
print("CWD", os.getcwd())
mode = args.get("--mode", "good")
x = torch.ones(4, device=torch.device(args["--device"]))
if mode == "crash":
    raise SystemExit("RuntimeError: boom on purpose")
if mode == "plain":
    print("loss 0.5")
    sys.exit(0)
log = Logger([StdOutBackend(Verbosity.DEFAULT)])
for i in range(int(args["--step"])):
    loss = float((x / (i + 1)).sum().item())
    if mode == "nan" and i == 1:
        loss = float("nan")
    log.log(step=(0, i), data={"rank": 0, "train.loss": loss, "train.ips": 100.0},
            verbosity=Verbosity.DEFAULT)
"#;

/// A zoo at `root`: one model directory per (case name, mode) and the case file listing them.
fn zoo(root: &Path, cases: &[(&str, &str)]) -> ZooCases {
    let mut text = String::from("# The ModelZoo's functional check runs each case.\n");
    for (name, mode) in cases {
        let dir = root.join(format!("PyTorch/contrib/Classification/Model_{name}"));
        std::fs::create_dir_all(dir.join("run_scripts")).unwrap();
        std::fs::write(dir.join("run_scripts/run_model.py"), SCRIPT).unwrap();
        text.push_str(&format!(
            "- case_name: {name}\n  desc:\n    run_dir: PyTorch/contrib/Classification/Model_{name}\n    run_file: run_scripts/run_model.py\n  params:\n    nnodes: 1\n    nproc_per_node: 1\n    batch_size: 8\n    model_name: model_{name}\n    dataset_path: /data/none\n    step: 3\n    epoch: 1\n    lr: 0.01\n    device: sdaa\n    autocast: False\n    others:\n      mode: {mode}\n"
        ));
    }
    let file = root.join("PyTorch/contrib/model_config/model.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    ZooCases::load(&file).unwrap()
}

fn kit() -> Kit {
    modelzoo_testkit::venv_python();
    modelzoo_testkit::emulator_home();
    Kit {
        root: modelzoo_testkit::workspace_root(),
    }
}

fn opts(work: &Path) -> Options {
    let kit = kit();
    Options {
        device: "sdaa".into(),
        jobs: 2,
        work_dir: work.to_path_buf(),
        path_prefix: vec![],
        sdaa: SdaaBackend::detect_with(Some(&kit), &[work.join("no-sdk")]),
        kit: Some(kit),
        kill_grace: Duration::from_millis(500),
        cancel: Default::default(),
        runs: 1,
        baseline_device: None,
    }
}

#[test]
fn a_case_runs_as_the_modelzoo_runs_it_on_the_emulator() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(
        tmp.path(),
        &[
            ("octocat", "good"),
            ("diverged", "nan"),
            ("crasher", "crash"),
            ("printer", "plain"),
        ],
    );
    let selected = cases::select(&zoo, None, None).unwrap();
    let results = cases::run_all(
        &zoo,
        &selected,
        &opts(&tmp.path().join("work")),
        Duration::from_secs(300),
    )
    .unwrap();
    let by = |n: &str| results.iter().find(|r| r.name == n).unwrap();

    let good = by("octocat");
    assert_eq!(good.status(), Status::Pass, "{good:#?}");
    assert_eq!(good.device, "sdaa (EMULATOR)");
    assert!(matches!(good.layout, Stage::Omitted(_)));
    assert_eq!(good.log, Stage::Pass("3 records, 3 train.loss".into()));
    let console = std::fs::read_to_string(&good.console).unwrap();
    assert!(
        console.contains(
            "ARGV run_scripts/run_model.py --nnodes 1 --nproc_per_node 1 --batch_size 8 \
             --model_name model_octocat --dataset_path /data/none --step 3 --epoch 1 --lr 0.01 \
             --device sdaa --autocast False --mode good\n"
        ),
        "{console}"
    );
    assert!(
        console.contains(&format!("CWD {}\n", good.dir.display())),
        "{console}"
    );
    assert!(
        console.contains("EMULATOR"),
        "the emulator's banner: {console}"
    );
    assert_eq!(
        good.command,
        "cd PyTorch/contrib/Classification/Model_octocat && python run_scripts/run_model.py \
         --nnodes 1 --nproc_per_node 1 --batch_size 8 --model_name model_octocat \
         --dataset_path /data/none --step 3 --epoch 1 --lr 0.01 --device sdaa --autocast False \
         --mode good"
    );

    let nan = by("diverged");
    assert_eq!(nan.run, Stage::Pass(String::new()));
    assert!(
        matches!(&nan.log, Stage::Fail(m) if m.contains("train.loss = NaN at epoch 0 iteration 1")),
        "{:?}",
        nan.log
    );

    let crash = by("crasher");
    assert!(
        matches!(&crash.run, Stage::Fail(m) if m.contains("exit status 1") && m.contains("boom on purpose")),
        "{:?}",
        crash.run
    );

    let plain = by("printer");
    assert_eq!(plain.run, Stage::Pass(String::new()));
    assert!(
        matches!(&plain.log, Stage::Fail(m) if m.contains("no train.loss in 0 tcap_dllogger records")),
        "{:?}",
        plain.log
    );

    let table = modelzoo_ci::render_table(&results);
    assert!(
        table.contains("4 models checked, 1 passed, 0 skipped, 3 failed"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("octocat   n/a     pass    pass")
                && l.ends_with("sdaa (EMULATOR)")),
        "{table}"
    );
}

#[test]
fn cases_are_selected_by_case_name() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path(), &[("alice", "good"), ("bob", "good")]);
    let names = vec!["bob".to_string()];
    let picked = cases::select(&zoo, Some(&names), None).unwrap();
    assert_eq!(picked.len(), 1);
    assert_eq!(picked[0].case_name, "bob");
    let err = cases::select(&zoo, Some(&["carol".to_string()]), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown case `carol`") && err.contains("lists: alice, bob"),
        "{err}"
    );
}

/// A case whose run outlives the timeout is stopped, and the whole case (run and console
/// check) stays within it.
#[test]
fn a_case_past_its_timeout_is_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = zoo(tmp.path(), &[("sleepy", "good")]);
    let script = zoo.run_dir(&zoo.cases[0]).join("run_scripts/run_model.py");
    std::fs::write(
        &script,
        "import time\nprint('sleeping', flush=True)\ntime.sleep(300)\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let results = cases::run_all(
        &zoo,
        &zoo.cases,
        &opts(&tmp.path().join("work")),
        Duration::from_secs(2),
    )
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(&results[0].run, Stage::Fail(m) if m.contains("timed out after 2 s") && m.contains("sleeping")),
        "{:?}",
        results[0].run
    );
    assert_eq!(
        results[0].log,
        Stage::Skip("not checked: the run used up the case's timeout".into())
    );
    assert_eq!(results[0].status(), Status::Fail);
}
