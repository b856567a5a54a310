//! The PR functional check on a real zoo made by the test: scaffolded model directories, a
//! model.yaml whose commands run a real script (tests/data/train.sh) writing tcap_dllogger
//! lines — one good, one NaN, one that hangs (killed with its process group), and so on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use model_config::ModelYaml;
use modelzoo_ci::{check_log, Options, SdaaBackend, Stage, Status, Summary};
use modelzoo_scaffold::{self as scaffold, Kind, NewModel};
use modelzoo_support::process::{run_command, RunOutcome};

const SCRIPT: &str = include_str!("data/train.sh");

/// A zoo at `root` with one scaffolded Python model per (name, mode, timeout, devices).
fn zoo(root: &Path, models: &[(&str, &str, u64, &str)]) -> ModelYaml {
    let mut yaml = String::from("models:\n");
    for (name, mode, timeout, devices) in models {
        let plan = scaffold::plan(&NewModel {
            name: name.to_string(),
            kind: Kind::Python,
            category: "Classification".into(),
            root: root.to_path_buf(),
            dir: None,
            train_script: None,
        })
        .unwrap();
        scaffold::apply(&plan).unwrap();
        // `validate` reports a fresh scaffold's TODO placeholders: write them as an adapter would.
        for (path, text) in &plan.files {
            if path.extension().is_some_and(|e| e == "md") {
                std::fs::write(path, text.replace("TODO", "written")).unwrap();
            }
        }
        std::fs::write(plan.model_dir.join("train.sh"), SCRIPT).unwrap();
        yaml.push_str(&format!(
            "  - name: {name}\n    path: Classification/{name}\n    framework: pytorch\n    category: Classification\n    devices: [{devices}]\n    command: sh train.sh {mode} --device {{device}} --step 5 --output_dir {{output_dir}}\n    log: \"{{output_dir}}/train.log\"\n    metrics: [train.loss, train.ips]\n    timeout: {timeout}\n"
        ));
    }
    let path = root.join("model_config/model.yaml");
    std::fs::write(&path, yaml).unwrap();
    ModelYaml::load(&path).unwrap()
}

fn opts(work: &Path) -> Options {
    Options {
        device: "cpu".into(),
        jobs: 2,
        work_dir: work.to_path_buf(),
        path_prefix: vec![],
        kit: None,
        sdaa: SdaaBackend::Missing,
        kill_grace: Duration::from_millis(500),
        cancel: Default::default(),
        runs: 1,
        baseline_device: None,
    }
}

#[test]
fn each_kind_of_failure_is_caught_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = zoo(
        tmp.path(),
        &[
            ("good", "good", 60, "cpu, sdaa"),
            ("nan_loss", "nan", 60, "cpu"),
            ("zero_ips", "zero_ips", 60, "cpu"),
            ("crash", "fail", 60, "cpu"),
            ("silent", "nolog", 60, "cpu"),
            ("sdaa_only", "good", 60, "sdaa"),
        ],
    );
    let entries = modelzoo_ci::select(&yaml, None, None).unwrap();
    let results = modelzoo_ci::run_all(&yaml, &entries, &opts(&tmp.path().join("work"))).unwrap();
    let by = |n: &str| results.iter().find(|r| r.name == n).unwrap();

    let good = by("good");
    assert_eq!(good.layout, Stage::Pass(String::new()), "{:?}", good.layout);
    assert_eq!(good.run, Stage::Pass(String::new()), "{:?}", good.run);
    assert_eq!(good.log, Stage::Pass("5 records, 5 train.loss".into()));
    assert!(good.passed());
    assert!(std::fs::read_to_string(&good.console)
        .unwrap()
        .contains("done 5 steps"));

    let nan = by("nan_loss");
    assert!(nan.run == Stage::Pass(String::new()));
    assert!(
        matches!(&nan.log, Stage::Fail(m) if m.contains("train.loss = NaN at epoch 0 iteration 3")),
        "{:?}",
        nan.log
    );

    assert!(
        matches!(&by("zero_ips").log, Stage::Fail(m) if m.contains("train.ips = 0")),
        "{:?}",
        by("zero_ips").log
    );

    let crash = by("crash");
    assert!(
        matches!(&crash.run, Stage::Fail(m) if m.contains("exit status 3") && m.contains("out of memory")),
        "{:?}",
        crash.run
    );

    assert!(
        matches!(&by("silent").log, Stage::Fail(m) if m.contains("no log")),
        "{:?}",
        by("silent").log
    );

    let skipped = by("sdaa_only");
    assert!(
        matches!(&skipped.run, Stage::Skip(m) if m.contains("device `cpu` not in its devices (sdaa)"))
    );
    assert_eq!(
        skipped.status(),
        Status::Skip,
        "a model that does not run on the device is skipped, not failed"
    );

    let table = modelzoo_ci::render_table(&results);
    assert!(
        table.contains("6 models checked, 1 passed, 1 skipped, 4 failed"),
        "{table}"
    );
    let junit = modelzoo_ci::render_junit(&results);
    assert!(
        junit.contains("tests=\"6\" failures=\"4\" skipped=\"1\""),
        "{junit}"
    );
    assert!(
        junit.contains("<testcase classname=\"modelzoo-ci\" name=\"nan_loss\""),
        "{junit}"
    );
    assert!(
        junit.contains("<skipped message=\"device `cpu` not in its devices (sdaa)\"/>"),
        "{junit}"
    );
    let md = modelzoo_ci::render_markdown(&results);
    assert!(md.contains("| nan\\_loss | pass | pass | FAIL |"), "{md}");
    assert!(md.contains("## crash"), "{md}");
}

#[test]
fn a_hanging_command_is_killed_with_its_whole_process_group() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = zoo(tmp.path(), &[("sleeper", "hang", 1, "cpu")]);
    let work = tmp.path().join("work");
    let started = std::time::Instant::now();
    let results = modelzoo_ci::run_all(&yaml, &yaml.models, &opts(&work)).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let r = &results[0];
    assert!(
        matches!(&r.run, Stage::Fail(m) if m.contains("timed out after 1 s")),
        "{:?}",
        r.run
    );
    let pids = std::fs::read_to_string(work.join("sleeper/pids")).unwrap();
    let pids: Vec<u32> = pids.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(pids.len(), 2, "the script and its background sleep");
    for pid in pids {
        assert!(gone(pid), "process {pid} survived the timeout");
    }
}

/// Issue #38 E15: a case that starts `env -i setsid sleep …` (out of its process group and
/// session, without the job marker) and exits left the daemon running after `ci` returned;
/// ci is a child subreaper now and ends it with the case.
#[test]
fn a_daemon_that_clears_its_environment_does_not_outlive_the_case() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = zoo(tmp.path(), &[("daemon", "daemon", 60, "cpu")]);
    let work = tmp.path().join("work");
    let results = modelzoo_ci::run_all(&yaml, &yaml.models, &opts(&work)).unwrap();
    assert!(results[0].passed(), "{:?}", results[0].run);
    let arg = std::fs::read_to_string(work.join("daemon/daemon")).unwrap();
    let left = sleeping(arg.trim());
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(
        left.is_empty(),
        "`env -i setsid sleep {}` outlived ci: {left:?}",
        arg.trim()
    );
}

/// Live (not zombie) processes whose command line is `sleep <arg>`.
fn sleeping(arg: &str) -> Vec<u32> {
    let want = format!("sleep\0{arg}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.ends_with(want.as_bytes()))
                && !gone(*pid)
        })
        .collect()
}

/// True once `pid` no longer exists (or is a zombie awaiting its reaper).
fn gone(pid: u32) -> bool {
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) if stat.split_whitespace().nth(2) == Some("Z") => return true,
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

#[test]
fn layout_violations_fail_the_model() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = zoo(tmp.path(), &[("untidy", "good", 60, "cpu")]);
    std::fs::remove_file(
        tmp.path()
            .join("Classification/untidy/run_scripts/formate_cmd.py"),
    )
    .unwrap();
    let results = modelzoo_ci::run_all(&yaml, &yaml.models, &opts(&tmp.path().join("w"))).unwrap();
    assert!(
        matches!(&results[0].layout, Stage::Fail(m) if m.contains("formate_cmd.py")),
        "{:?}",
        results[0].layout
    );
    assert!(!results[0].passed());
}

#[test]
fn selection_by_name_and_by_git_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let yaml = zoo(
        root,
        &[("alpha", "good", 60, "cpu"), ("beta", "good", 60, "cpu")],
    );
    let names = vec!["beta".to_string()];
    let picked = modelzoo_ci::select(&yaml, Some(&names), None).unwrap();
    assert_eq!(picked.len(), 1);
    assert_eq!(picked[0].name, "beta");
    let err = modelzoo_ci::select(&yaml, Some(&["gamma".to_string()]), None).unwrap_err();
    assert!(
        err.to_string().contains("unknown model `gamma`")
            && err.to_string().contains("alpha, beta")
    );

    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        ok
    };
    if !git(&["init", "-q"]) {
        eprintln!("git not available; skipping the --changed-since part");
        return;
    }
    assert!(git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "add",
        "."
    ]));
    assert!(git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "zoo"
    ]));
    assert!(modelzoo_ci::select(&yaml, None, Some("HEAD"))
        .unwrap()
        .is_empty());
    std::fs::write(root.join("Classification/alpha/train.sh"), "exit 0\n").unwrap();
    let picked = modelzoo_ci::select(&yaml, None, Some("HEAD")).unwrap();
    assert_eq!(
        picked.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
        ["alpha"]
    );
    // An untracked file in a model directory counts as a change too.
    std::fs::write(root.join("Classification/beta/new.py"), "").unwrap();
    assert_eq!(
        modelzoo_ci::select(&yaml, None, Some("HEAD"))
            .unwrap()
            .len(),
        2
    );
    let err = modelzoo_ci::select(&yaml, None, Some("no-such-rev")).unwrap_err();
    assert!(err.to_string().contains("no-such-rev"), "{err}");
}

#[test]
fn log_check_on_the_real_modelzoo_fixtures() {
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/tecorigin-modelzoo");
    if !fixtures.is_dir() {
        eprintln!("skipping: {} not present", fixtures.display());
        return;
    }
    let metrics = vec!["train.loss".to_string(), "train.ips".to_string()];
    let demo: PathBuf = fixtures.join("demo/sdaa.log");
    assert!(
        matches!(check_log(&demo, &metrics), Stage::Pass(_)),
        "{:?}",
        check_log(&demo, &metrics)
    );
    // tcap JSONStreamBackend with a Python-repr `data` string.
    let fer = fixtures.join("facial-expression-recognition/sdaa_loss.json");
    assert_eq!(
        check_log(&fer, &metrics),
        Stage::Pass("20 records, 20 train.loss".into())
    );
    // A metric model.yaml promises but the log never has is named.
    let stage = check_log(&fer, &["train.loss".to_string(), "eval.acc".to_string()]);
    assert!(
        matches!(&stage, Stage::Fail(m) if m.contains("never logged: eval.acc")),
        "{stage:?}"
    );
}

/// Issue #13: a model skipped for the device was counted as passed. Every report counts it as
/// skipped, and the counts add up.
#[test]
fn skipped_models_are_counted_as_skipped_in_every_report() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = zoo(
        tmp.path(),
        &[
            ("good", "good", 60, "cpu"),
            ("sdaa_only", "good", 60, "sdaa"),
        ],
    );
    let results = modelzoo_ci::run_all(&yaml, &yaml.models, &opts(&tmp.path().join("w"))).unwrap();
    assert_eq!(results[0].status(), Status::Pass);
    assert_eq!(results[1].status(), Status::Skip);
    assert!(!results[1].passed() && !results[1].failed());
    assert_eq!(
        Summary::of(&results),
        Summary {
            total: 2,
            passed: 1,
            skipped: 1,
            failed: 0
        }
    );
    let table = modelzoo_ci::render_table(&results);
    assert!(
        table.ends_with("2 models checked, 1 passed, 1 skipped, 0 failed\n"),
        "{table}"
    );
    let junit = modelzoo_ci::render_junit(&results);
    assert!(
        junit.contains("tests=\"2\" failures=\"0\" skipped=\"1\""),
        "{junit}"
    );
    assert_eq!(junit.matches("<skipped ").count(), 1, "{junit}");
    let md = modelzoo_ci::render_markdown(&results);
    assert!(
        md.contains("2 models checked, 1 passed, 1 skipped, 0 failed."),
        "{md}"
    );
    assert!(
        md.contains("## Skipped\n\n- sdaa\\_only: device \\`cpu\\` not in its devices (sdaa)\n"),
        "{md}"
    );
}

/// Issue #13: `timeout: 18446744073709551615` panicked ("overflow when adding duration to
/// instant") with the command left running. model.yaml refuses it now; an entry built in code
/// that still has it runs with no deadline, and the runner never panics.
#[test]
fn a_timeout_past_the_clock_neither_panics_nor_leaves_the_command_running() {
    let tmp = tempfile::tempdir().unwrap();
    let mut yaml = zoo(tmp.path(), &[("forever", "good", 60, "cpu")]);
    yaml.models[0].timeout = u64::MAX;
    let results = modelzoo_ci::run_all(&yaml, &yaml.models, &opts(&tmp.path().join("w"))).unwrap();
    assert_eq!(results[0].status(), Status::Pass, "{:?}", results[0]);

    // The runner itself: exits normally, and what the command left in its group is killed.
    let pids = tmp.path().join("pids");
    let outcome = run_command(
        &format!("sleep 300 & echo $! > '{}'; exit 0", pids.display()),
        tmp.path(),
        Duration::MAX,
        &tmp.path().join("console.log"),
        &[],
        Duration::MAX,
        &Default::default(),
    );
    assert_eq!(outcome, RunOutcome::Exited { code: 0 });
    let pid: u32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(gone(pid), "the background sleep {pid} outlived the command");
}

/// Issue #13: a `log:` outside `{output_dir}` (which CI empties before each run) passed on a
/// file left by an earlier run although this run wrote nothing. model.yaml refuses it; an
/// entry built in code fails the log stage without running.
#[test]
fn a_log_outside_output_dir_cannot_pass_on_a_stale_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mut yaml = zoo(tmp.path(), &[("stale", "nolog", 60, "cpu")]);
    let dir = yaml.model_dir(&yaml.models[0]);
    std::fs::write(
        dir.join("train.log"),
        "TCAPPDLL 2025-05-15 14:20:10.930380 - Epoch: 0 Iteration: 0  rank : 0  train.loss : 0.5  train.ips : 10.0 imgs/s\n",
    )
    .unwrap();
    assert!(matches!(
        check_log(&dir.join("train.log"), &yaml.models[0].metrics),
        Stage::Pass(_)
    ));
    yaml.models[0].log = "train.log".into();
    let results = modelzoo_ci::run_all(&yaml, &yaml.models, &opts(&tmp.path().join("w"))).unwrap();
    let r = &results[0];
    assert_eq!(r.status(), Status::Fail, "{r:?}");
    assert!(
        matches!(&r.log, Stage::Fail(m) if m.contains("`log: train.log` must be a file inside {output_dir}")),
        "{:?}",
        r.log
    );
    assert!(
        !r.console.exists(),
        "the command is not run for an entry that cannot be checked"
    );
}

/// Runs `f` on a thread and fails the test when it takes longer than `limit` (a hang must be
/// a failure, not a test run that never ends).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not return within {limit:?}: it hung"))
}

/// Issue #28 (data loss): `--work-dir W` emptied `W/<model>/` even when it held the user's own
/// files. CI now only clears a directory it created (marked); one holding anything else is
/// refused before anything runs, and the user's file survives.
#[test]
fn a_work_dir_holding_user_files_is_never_emptied() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = zoo(tmp.path(), &[("good", "good", 60, "cpu")]);
    let work = tmp.path().join("work");
    std::fs::create_dir_all(work.join("good")).unwrap();
    std::fs::write(work.join("good/thesis.tex"), "years of work").unwrap();
    let result = modelzoo_ci::run_all(&yaml, &yaml.models, &opts(&work));
    assert_eq!(
        std::fs::read_to_string(work.join("good/thesis.tex"))
            .ok()
            .as_deref(),
        Some("years of work"),
        "ci deleted a file it did not create"
    );
    let err = result.expect_err("a work dir holding foreign files is refused");
    let msg = err.to_string();
    assert!(
        msg.contains(&work.join("good").display().to_string()) && msg.contains("thesis.tex"),
        "{msg}"
    );
}

/// Issue #28 (hang): a command that leaves a FIFO as its log blocked the log check forever
/// (the entry's timeout covered only the command). The FIFO is named, and nothing blocks.
#[test]
fn a_fifo_log_or_console_is_named_and_never_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = zoo(
        tmp.path(),
        &[
            ("fifo_log", "fifo_log", 5, "cpu"),
            ("fifo_console", "fifo_console", 5, "cpu"),
        ],
    );
    let work = tmp.path().join("work");
    let results = within(Duration::from_secs(60), move || {
        modelzoo_ci::run_all(&yaml, &yaml.models, &opts(&work)).unwrap()
    });
    let log = &results[0];
    assert!(
        matches!(&log.log, Stage::Fail(m) if m.contains("not a regular file (a FIFO)") && m.contains("train.log")),
        "{:?}",
        log.log
    );
    let console = &results[1];
    assert!(
        matches!(&console.run, Stage::Fail(m) if m.contains("exit status 1") && m.contains("console.log") && m.contains("a FIFO")),
        "{:?}",
        console.run
    );
}

/// Issue #28 (injection): `--changed-since=--output=FILE` went to git as an option (git
/// wrote FILE) and the check then had "nothing to check". The value is a revision: one that
/// is not a commit is refused, naming it, and git never sees it as an option.
#[test]
fn changed_since_is_a_revision_never_an_option() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let yaml = zoo(root, &[("alpha", "good", 60, "cpu")]);
    let git_ok = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if !git_ok(&["init", "-q"]) {
        eprintln!("git not available; skipping");
        return;
    }
    assert!(git_ok(&["add", "."]) && git_ok(&["commit", "-qm", "zoo"]));
    let planted = root.join("planted.txt");
    let rev = format!("--output={}", planted.display());
    let err = modelzoo_ci::select(&yaml, None, Some(&rev)).unwrap_err();
    assert!(
        !planted.exists(),
        "git took the revision for an option and wrote {planted:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("`{rev}`")) && msg.contains("not a commit"),
        "{msg}"
    );
}

/// The kit (this repository): its `.venv` and SDAA emulator, as `make build` leaves them.
fn kit() -> modelzoo_support::kit::Kit {
    modelzoo_testkit::venv_python();
    modelzoo_testkit::emulator_home();
    modelzoo_support::kit::Kit {
        root: modelzoo_testkit::workspace_root(),
    }
}

/// Issue: commands ran with the system `python3` (no torch). They run with the kit's
/// `.venv/bin` on PATH (after the binary's directory), and without an SDAA card `--device sdaa`
/// goes to the emulator — SDAA_HOME for the Rust models, its torch_sdaa on PYTHONPATH for the
/// Python ones — and every report says `sdaa (EMULATOR)`.
#[test]
fn commands_run_with_the_kits_python_and_on_the_emulator_without_a_card() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = zoo(tmp.path(), &[("probe", "env", 60, "cpu, sdaa")]);
    let kit = kit();
    let sdaa = SdaaBackend::detect_with(Some(&kit), &[tmp.path().join("no-sdk")]);
    let emulator = kit.root.join("target/sdaa-emulator");
    assert_eq!(
        sdaa,
        SdaaBackend::Emulator {
            home: emulator.clone(),
            python: Some(emulator.join("python"))
        }
    );
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let opts = Options {
        device: "sdaa".into(),
        path_prefix: vec![bin.clone()],
        kit: Some(kit.clone()),
        sdaa,
        ..opts(&tmp.path().join("work"))
    };
    let results = modelzoo_ci::run_all(&yaml, &yaml.models, &opts).unwrap();
    let r = &results[0];
    assert_eq!(r.status(), Status::Pass, "{r:?}");
    assert_eq!(r.device, "sdaa (EMULATOR)");
    let console = std::fs::read_to_string(&r.console).unwrap();
    let venv_bin = kit.root.join(".venv/bin");
    assert!(
        console.contains(&format!("PATH={}:{}:", bin.display(), venv_bin.display())),
        "{console}"
    );
    assert!(
        console.contains(&format!("python={}/python\n", venv_bin.display())),
        "{console}"
    );
    if std::env::var_os("SDAA_HOME").is_none() {
        assert!(
            console.contains(&format!("SDAA_HOME={}\n", emulator.display())),
            "{console}"
        );
    }
    assert!(
        console.lines().any(|l| l.starts_with("PYTHONPATH=")
            && l.ends_with(&emulator.join("python").display().to_string())),
        "{console}"
    );
    let table = modelzoo_ci::render_table(&results);
    assert!(
        table.lines().nth(1).unwrap().ends_with("  sdaa (EMULATOR)"),
        "{table}"
    );
    let junit = modelzoo_ci::render_junit(&results);
    assert!(
        junit.contains("<testsuite name=\"modelzoo-ci on sdaa (EMULATOR)\""),
        "{junit}"
    );
    let md = modelzoo_ci::render_markdown(&results);
    assert!(
        md.contains("Device: sdaa (EMULATOR).\nThe SDAA runs went to the SDAA EMULATOR"),
        "{md}"
    );

    // On the CPU the device is the CPU, whatever the SDAA backend.
    let cpu = Options {
        device: "cpu".into(),
        ..opts.clone()
    };
    let results = modelzoo_ci::run_all(&yaml, &yaml.models, &cpu).unwrap();
    assert_eq!(results[0].device, "cpu");
    assert!(!modelzoo_ci::render_junit(&results).contains("EMULATOR"));
}

/// Issue: a run in which every selected model was skipped ended "0 passed, 1 skipped" and
/// looked passed. It is named as a run that checked nothing (the CLI exits 1 on it).
#[test]
fn a_run_that_checked_nothing_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = zoo(
        tmp.path(),
        &[
            ("good", "good", 60, "cpu"),
            ("sdaa_only", "good", 60, "sdaa"),
        ],
    );
    assert_eq!(
        modelzoo_ci::nothing_checked(&[]).as_deref(),
        Some("nothing was checked: no model was selected")
    );
    let only_skips =
        modelzoo_ci::run_all(&yaml, &yaml.models[1..], &opts(&tmp.path().join("w"))).unwrap();
    assert_eq!(
        modelzoo_ci::nothing_checked(&only_skips).as_deref(),
        Some(
            "nothing was checked: every selected model was skipped \
             (sdaa_only: device `cpu` not in its devices (sdaa))"
        )
    );
    let mixed = modelzoo_ci::run_all(&yaml, &yaml.models, &opts(&tmp.path().join("w"))).unwrap();
    assert_eq!(modelzoo_ci::nothing_checked(&mixed), None);
}

/// CI's own output directories are reused: a second run empties what the first left (its
/// marker says the directory is CI's).
#[test]
fn a_work_dir_ci_made_is_emptied_between_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = zoo(tmp.path(), &[("good", "good", 60, "cpu")]);
    let work = tmp.path().join("work");
    for _ in 0..2 {
        let results = modelzoo_ci::run_all(&yaml, &yaml.models, &opts(&work)).unwrap();
        assert_eq!(results[0].status(), Status::Pass, "{:?}", results[0]);
        // The log holds this run's 5 steps only.
        assert_eq!(
            results[0].log,
            Stage::Pass("5 records, 5 train.loss".into())
        );
        std::fs::write(work.join("good/leftover.txt"), "from the run").unwrap();
    }
    assert!(work
        .join("good")
        .join(modelzoo_ci::workdir::MARKER)
        .is_file());
}

/// `--runs 3 --baseline-device cpu`: every run of an entry is log-checked, and the final
/// `train.loss` of its three sdaa runs is compared with its three cpu runs by Welch's test —
/// a spread under the 1% margin passes, a device-only 20% worse loss fails, naming the test.
#[test]
fn runs_across_devices_are_compared_with_welchs_test() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = zoo(
        tmp.path(),
        &[
            ("fair", "noisy", 60, "cpu, sdaa"),
            ("worse", "noisy_sdaa_worse", 60, "cpu, sdaa"),
        ],
    );
    let opts = Options {
        device: "sdaa".into(),
        runs: 3,
        baseline_device: Some("cpu".into()),
        ..opts(&tmp.path().join("work"))
    };
    let results = modelzoo_ci::run_all(&yaml, &yaml.models, &opts).unwrap();
    let by = |n: &str| results.iter().find(|r| r.name == n).unwrap();
    let fair = by("fair");
    assert_eq!(fair.status(), Status::Pass, "{fair:?}");
    assert!(
        fair.log.detail().contains("PASS (welch") && fair.log.detail().contains("3 runs"),
        "{fair:?}"
    );
    let worse = by("worse");
    assert_eq!(worse.status(), Status::Fail, "{worse:?}");
    assert!(worse.log.detail().contains("FAIL (welch"), "{worse:?}");
    // Each run had an output directory of its own: three on sdaa, three on cpu.
    for dir in [
        "worse",
        "worse.run2",
        "worse.run3",
        "worse.cpu.run1",
        "worse.cpu.run3",
    ] {
        let log = tmp.path().join("work").join(dir).join("train.log");
        assert!(log.is_file(), "{}", log.display());
    }
}
