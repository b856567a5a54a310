//! run_resnet's command line: every spec argument in --help, --print_cmd round-trips, bad
//! input exits 2 with a clear message.

mod common;

use common::{run, text, BIN};
use std::process::Command;

#[test]
fn help_lists_every_spec_argument_with_defaults() {
    let spec = modelzoo_resnet::recipe::spec().unwrap();
    let o = Command::new(BIN).arg("--help").output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    // Collapse the wrapping of `--help` so "[default: 42]" is found whatever the line breaks.
    let help = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for a in &spec.args {
        assert!(
            help.contains(&format!("--{}", a.name)),
            "--help lacks --{}:\n{help}",
            a.name
        );
        if let Some(d) = a.default_text() {
            assert!(
                help.contains(&format!("[default: {d}]")),
                "--help lacks default of --{}",
                a.name
            );
        }
    }
    assert!(help.contains("resnet18") && help.contains("--bs"), "{help}");
}

#[test]
fn print_cmd_round_trips() {
    let args: Vec<String> = [
        "--bs",
        "16",
        "--model_name",
        "resnet34",
        "--amp",
        "-o",
        "Engine.logging_freq=5",
        "--output_dir",
        "/tmp/a b",
        "--lr",
        "0.05",
        "--channels_last",
        "--print_cmd",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let first = String::from_utf8(o.stdout).unwrap();
    assert!(
        first.starts_with("run_resnet \\\n    --model_name resnet34 \\\n"),
        "{first}"
    );
    assert!(
        first.contains("--batch_size 16") && first.contains("'/tmp/a b'"),
        "{first}"
    );
    // Feed it back (plus --print_cmd): the same resolved command comes out.
    let mut again = shlex::split(&first.replace("\\\n", " ")).unwrap();
    again.remove(0);
    again.push("--print_cmd".into());
    let o2 = run(&again);
    assert!(o2.status.success(), "{}", text(&o2));
    assert_eq!(String::from_utf8(o2.stdout).unwrap(), first);
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(empty.join("train")).unwrap();
    let noimg = dir.path().join("noimg");
    std::fs::create_dir_all(noimg.join("train/cat")).unwrap();
    std::fs::write(noimg.join("train/cat/readme.txt"), "x").unwrap();
    let out = dir.path().join("out").display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--batch_sise".into(), "3".into()], "--batch_size"),
        (vec!["--bs".into(), "x".into()], "invalid digit"),
        (
            vec!["--model_name".into(), "resnet19".into()],
            "resnet18, resnet34, resnet50, resnet101, resnet152",
        ),
        (vec!["--amp_dtype".into(), "fp8".into()], "auto, fp16, bf16"),
        (
            vec!["--memory_format".into(), "nhcw".into()],
            "auto, nchw, nhwc",
        ),
        (
            vec![
                "--channels_last".into(),
                "--memory_format".into(),
                "nchw".into(),
            ],
            "--channels_last asks for nhwc and --memory_format nchw for nchw: drop one",
        ),
        (
            vec!["--bs".into(), "0".into()],
            "--batch_size 0: must be a positive integer",
        ),
        (
            vec![
                "--dataset_path".into(),
                dir.path().join("nope").display().to_string(),
            ],
            "does not exist",
        ),
        (
            vec!["--dataset_path".into(), empty.display().to_string()],
            "no class directories",
        ),
        (
            vec!["--dataset_path".into(), noimg.display().to_string()],
            "holds no .jpg/.jpeg/.png images",
        ),
        (
            vec!["--device".into(), "gpu".into()],
            "cpu, cuda, cuda:N, sdaa, sdaa:N",
        ),
        (
            vec![
                "--nnode".into(),
                "2".into(),
                "--node_rank".into(),
                "2".into(),
            ],
            "--node_rank 2 with --nnode 2: node ranks go from 0 to 1",
        ),
        (vec!["-o".into(), "Engine.max_stepz=3".into()], "max_steps"),
        (
            vec![
                "--resume".into(),
                dir.path().join("nockpt").display().to_string(),
            ],
            "no such checkpoint file or directory",
        ),
    ];
    for (args, want) in cases {
        let mut a = args.clone();
        a.extend(["--output_dir".to_string(), out.clone()]);
        let o = run(&a);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains(want), "{args:?}: want {want:?} in\n{t}");
        assert!(!t.contains("panicked"), "{args:?}: {t}");
    }
}

/// Sizes that cannot fit, values no run can use and config sections run_resnet would ignore
/// are refused before anything is allocated: exit 2 naming the argument, never an allocator
/// abort (rc 134), a mid-run unwrap or a silently ignored override.
#[test]
fn impossible_sizes_ranges_and_unknown_sections_exit_2_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let cfg = dir.path().join("extra.yaml");
    std::fs::write(&cfg, "Engine:\n  max_steps: 1\nData:\n  batch_size: 4\n").unwrap();
    let big = i64::MAX.to_string();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--batch_size", "1000000000000"],
            vec![
                "--batch_size 1000000000000",
                "one training step needs",
                "is available",
            ],
        ),
        (
            vec!["--image_size", "100000000"],
            vec!["--image_size 100000000", "one training step needs"],
        ),
        (
            vec!["--batch_size", &big, "--image_size", &big],
            vec!["overflows 64-bit arithmetic"],
        ),
        (
            vec!["--lr", "-1"],
            vec!["--lr -1: must be a finite number > 0"],
        ),
        (
            vec!["--lr", "nan"],
            vec!["--lr NaN: must be a finite number > 0"],
        ),
        (
            vec!["--label_smoothing", "5"],
            vec!["--label_smoothing 5: must be a number in [0, 1)"],
        ),
        (
            vec!["--momentum", "-0.9"],
            vec!["--momentum -0.9: must be a finite number >= 0"],
        ),
        (
            vec!["--weight_decay", "inf"],
            vec!["--weight_decay inf: must be a finite number >= 0"],
        ),
        (
            vec!["-o", "Nope.x=1"],
            vec![
                "`-o Nope.x=1`",
                "unknown config section `Nope`; valid sections: Engine",
            ],
        ),
        (
            vec!["-c", cfg.to_str().unwrap()],
            vec!["extra.yaml", "unknown config section `Data`"],
        ),
    ];
    for (args, wants) in cases {
        // common::small without the sizes a case sets itself.
        let mut a: Vec<String> = common::small(&out);
        if let Some(i) = a.iter().position(|x| x == "--image_size") {
            if args.contains(&"--image_size") {
                a.drain(i..i + 2);
            }
        }
        a.extend(args.iter().map(|s| s.to_string()));
        let started = std::time::Instant::now();
        let o = run(&a);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        for want in wants {
            assert!(t.contains(want), "{args:?}: want {want:?} in\n{t}");
        }
        assert!(
            !t.contains("panicked") && !t.contains("memory allocation"),
            "{args:?}: {t}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "{args:?}: refused only after {:?}",
            started.elapsed()
        );
    }
}

/// Diagnostics written to a pipe or a file carry no ANSI colour codes (they made the demo
/// log unreadable); colour is for terminals only.
#[test]
fn diagnostics_into_a_pipe_have_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = common::small(dir.path());
    a.extend(
        [
            "--batch_size",
            "4",
            "--synthetic_samples",
            "8",
            "--step",
            "1",
            "--sync_bn",
        ]
        .map(String::from),
    );
    let o = Command::new(BIN)
        .args(&a)
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("INFO") && err.contains("WARN"), "{t}");
    assert!(
        !o.stderr.contains(&0x1b) && !o.stdout.contains(&0x1b),
        "ESC in output:\n{t}"
    );
}

/// Issue #38 C9: `--resume` naming a FIFO hung run_resnet (deaf to the first SIGTERM, blocked in
/// libtorch's read). It is refused before the run starts: exit 2 naming it. Under `timeout`,
/// so a regression fails instead of hanging.
#[test]
fn a_fifo_as_resume_exits_2_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("step_1.ckpt");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut args = common::small(&dir.path().join("out"));
    args.extend(["--resume".to_string(), fifo.display().to_string()]);
    let o = Command::new("timeout")
        .arg("60")
        .arg(BIN)
        .args(&args)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains(&fifo.display().to_string()) && t.contains("a FIFO"),
        "{t}"
    );
}
