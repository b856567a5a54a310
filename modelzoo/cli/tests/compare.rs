//! `modelzoo compare` as a user runs it: exit codes, text and JSON output, the report dir.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn modelzoo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_modelzoo"))
        .args(args)
        .output()
        .expect("run modelzoo")
}

/// A tcap stdout log of `steps` iterations of rank 0, loss scaled by `scale`.
fn log(dir: &Path, name: &str, steps: u64, scale: f64) -> PathBuf {
    let mut s = String::new();
    for it in 0..steps {
        let loss = (2.0 + (it as f64 * 0.3).sin() * 0.1) * scale;
        writeln!(
            s,
            "TCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: 0 Iteration: {it}  rank : 0  train.loss : {loss}  train.ips : 100.0 imgs/s"
        )
        .unwrap();
    }
    let p = dir.join(name);
    fs::write(&p, s).unwrap();
    p
}

#[test]
fn pass_fail_and_unusable_exit_codes() {
    let t = tempfile::tempdir().unwrap();
    let b = log(t.path(), "cuda.log", 100, 1.0);
    let ok = log(t.path(), "ok.log", 100, 1.005);
    let bad = log(t.path(), "bad.log", 100, 1.02);
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();

    let out = modelzoo(&["compare", "--baseline", &s(&b), "--candidate", &s(&ok)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("PASS (rel1, threshold 1.0000%)"),
        "{stdout}"
    );

    let out = modelzoo(&["compare", "--baseline", &s(&b), "--candidate", &s(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL"));
    // The threshold is settable, as a fraction or a percentage.
    for th in ["0.03", "3%"] {
        let out = modelzoo(&[
            "compare",
            "--baseline",
            &s(&b),
            "--candidate",
            &s(&bad),
            "--threshold",
            th,
        ]);
        assert_eq!(out.status.code(), Some(0), "--threshold {th}");
    }
    // loss.py's rule passes a 2% higher loss: mean((c-b)/b) = 0.02 ≤ 0.05 — and warns.
    let out = modelzoo(&[
        "compare",
        "--baseline",
        &s(&b),
        "--candidate",
        &s(&bad),
        "--rule",
        "modelzoo-loss",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("warning: modelzoo-loss uses signed means")
    );

    let out = modelzoo(&[
        "compare",
        "--baseline",
        &s(&b),
        "--candidate",
        "/nonexistent/sdaa.log",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: candidate log /nonexistent/sdaa.log"),
        "{stderr}"
    );

    let out = modelzoo(&[
        "compare",
        "--baseline",
        &s(&b),
        "--candidate",
        &s(&ok),
        "--metric",
        "val.top1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("metric `val.top1` is absent"));

    let out = modelzoo(&[
        "compare",
        "--baseline",
        &s(&b),
        "--candidate",
        &s(&ok),
        "--threshold",
        "abc",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn report_dir_and_json() {
    let t = tempfile::tempdir().unwrap();
    let b = log(t.path(), "cuda.log", 300, 1.0);
    let c = log(t.path(), "sdaa.log", 250, 0.997);
    let rep = t.path().join("out/report");
    // The candidate stopped at step 250 of 300: judged on its steps with --allow-partial.
    let out = modelzoo(&[
        "compare",
        "--baseline",
        b.to_str().unwrap(),
        "--candidate",
        c.to_str().unwrap(),
        "--report-dir",
        rep.to_str().unwrap(),
        "--json",
        "--allow-partial",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["figures"]["steps_compared"], 250);
    assert_eq!(v["only_in_baseline"], 50);
    assert_eq!(v["figures"]["coverage"], 250.0 / 300.0);
    assert_eq!(v["allow_partial"], true);
    assert!(v["command"]
        .as_str()
        .unwrap()
        .starts_with("modelzoo compare --baseline "));
    let on_disk: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(rep.join("summary.json")).unwrap()).unwrap();
    assert_eq!(on_disk, v);
    let md = fs::read_to_string(rep.join("report.md")).unwrap();
    assert!(
        md.contains("only in baseline: epoch 0 iteration 250 .. epoch 0 iteration 299 (50 steps)"),
        "{md}"
    );
    for f in ["report.html", "curves.svg", "rel_error.svg"] {
        assert!(rep.join(f).is_file(), "{f} missing");
    }

    // A report dir that cannot be created: exit 2, nothing half-written.
    let blocker = t.path().join("file");
    fs::write(&blocker, "x").unwrap();
    let out = modelzoo(&[
        "compare",
        "--baseline",
        b.to_str().unwrap(),
        "--candidate",
        c.to_str().unwrap(),
        "--report-dir",
        blocker.join("r").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("report directory"));
}

#[test]
fn fixture_pair_runs_through_the_cli() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("../shared/fixtures/tecorigin-modelzoo/facial-expression-recognition");
    if !dir.is_dir() {
        println!("skipping: {} not found", dir.display());
        return;
    }
    let (b, c) = (dir.join("cuda_loss.json"), dir.join("sdaa_loss.json"));
    let out = modelzoo(&[
        "compare",
        "--baseline",
        b.to_str().unwrap(),
        "--candidate",
        c.to_str().unwrap(),
        "--json",
    ]);
    let code = out.status.code();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["figures"]["steps_compared"], 20);
    // 20 steps of a 40,000-step run: the pass/fail here only has to match the figure.
    let fin = v["figures"]["final_rel_err"].as_f64().unwrap();
    assert_eq!(code, Some(if fin.abs() <= 0.01 { 0 } else { 1 }));
}

/// issue #13 through the CLI: a candidate that stopped early exits 1 (0 with --allow-partial),
/// the same file under two paths is warned about, and --allow-partial is in --help.
#[test]
fn stopped_run_fails_and_same_file_warns() {
    let t = tempfile::tempdir().unwrap();
    let b = log(t.path(), "cuda.log", 100, 1.0);
    let c = log(t.path(), "sdaa.log", 1, 1.0);
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();

    let out = modelzoo(&["compare", "--baseline", &s(&b), "--candidate", &s(&c)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("coverage: steps compared of the longer log")
            && stdout.contains("1 of 100 (1.00%; baseline 100, candidate 1; at least 95.00%)")
            && stdout.contains(
                "FAIL (rel1, threshold 1.0000%): 1 step(s) compared of the baseline's 100 (1.00%; the candidate has 1), below the 95.00% --min-coverage"
            ),
        "{stdout}"
    );
    let out = modelzoo(&[
        "compare",
        "--baseline",
        &s(&b),
        "--candidate",
        &s(&c),
        "--allow-partial",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "1 of 100 (1.00%; baseline 100, candidate 1; at least 95.00%), partial run allowed"
        ),
        "{stdout}"
    );

    let detour = t.path().join(".").join("cuda.log");
    let out = modelzoo(&["compare", "--baseline", &s(&b), "--candidate", &s(&detour)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("warning: baseline and candidate are the same file"),
        "{stdout}"
    );

    let help = modelzoo(&["compare", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("--allow-partial"));
}

/// issue #15 item 6 through the CLI: --noise reports the candidate against a second baseline
/// run beside the 1% verdict; the exit code follows the 1% rule unless --noise-gate.
#[test]
fn noise_run_reports_run_to_run_variation() {
    let t = tempfile::tempdir().unwrap();
    let b = log(t.path(), "cuda.log", 100, 1.0);
    let seed2 = log(t.path(), "seed2.log", 100, 1.004); // 0.4% run-to-run
    let inside = log(t.path(), "inside.log", 100, 1.005); // 0.5%: ratio 1.25
    let outside = log(t.path(), "outside.log", 100, 1.009); // 0.9%: ratio 2.25, passes 1%
    let copy = log(t.path(), "copy.log", 100, 1.0);
    let short = log(t.path(), "short.log", 60, 1.004);
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let run = |cand: &PathBuf, noise: &PathBuf, extra: &[&str]| {
        let mut args = vec![
            "compare".to_string(),
            "--baseline".into(),
            s(&b),
            "--candidate".into(),
            s(cand),
            "--noise".into(),
            s(noise),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        modelzoo(&args)
    };

    let out = run(&inside, &seed2, &["--noise-gate"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("ratio candidate / noise"), "{stdout}");
    assert!(stdout.contains("1.250 (limit 2)"), "{stdout}");
    assert!(
        stdout.contains("noise floor: within run-to-run variation — candidate deviation 0.5000% / noise deviation 0.4000% = 1.250 ≤ 2 over 100 step(s)"),
        "{stdout}"
    );

    // Outside the noise: reported, exit 0 (the 1% rule passes) — 1 under --noise-gate.
    let out = run(&outside, &seed2, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("PASS (rel1"), "{stdout}");
    assert!(
        stdout.contains("noise floor: exceeds run-to-run variation")
            && stdout.contains("reported only: the exit code follows the rule above"),
        "{stdout}"
    );
    let out = run(&outside, &seed2, &["--noise-gate"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("FAIL (rel1, threshold 1.0000%): --noise-gate"));
    let out = run(&outside, &seed2, &["--noise-gate", "--noise-factor", "3"]);
    assert_eq!(out.status.code(), Some(0));

    // --json carries the noise object.
    let out = run(&outside, &seed2, &["--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["noise"]["verdict"], "exceeds");
    assert_eq!(json["noise"]["steps"], 100);
    assert!((json["noise"]["ratio"].as_f64().unwrap() - 2.25).abs() < 1e-6);

    // Zero variation: stated, exit 0 without the gate, 1 with it.
    let out = run(&inside, &copy, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("the noise floor is zero, so comparing against it is meaningless"),
        "{stdout}"
    );
    assert_eq!(
        run(&inside, &copy, &["--noise-gate"]).status.code(),
        Some(1)
    );
    // The baseline file itself: warned.
    let out = run(&inside, &b, &[]);
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("warning: baseline and noise run are the same file"));

    // A shorter noise run: measured on the common steps, said so.
    let out = run(&inside, &short, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("(60 values; 60 of 100 compared steps used)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("warning: the noise run covers 60 of the 100 compared steps"),
        "{stdout}"
    );

    // Unusable: a missing noise log, a bad factor, --noise-gate without --noise: exit 2.
    let out = run(&inside, &t.path().join("missing.log"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: noise log ") && stderr.contains("missing.log"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    assert_eq!(
        run(&inside, &seed2, &["--noise-factor", "0"]).status.code(),
        Some(2)
    );
    let out = modelzoo(&[
        "compare",
        "--baseline",
        &s(&b),
        "--candidate",
        &s(&inside),
        "--noise-gate",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// Issue #25 item 1 through the CLI: runs a few steps apart pass the default --min-coverage
/// (95%) and a stricter one fails them (exit 1); a bad share is exit 2. The default metric
/// falls back to `train_loss` / `loss` in build-in and NLP logs and says so; an explicit
/// --metric does not.
#[test]
fn min_coverage_and_the_default_metric_fallback() {
    let t = tempfile::tempdir().unwrap();
    let b = log(t.path(), "cuda.log", 105, 1.0);
    let c = log(t.path(), "sdaa.log", 101, 1.002);
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let out = modelzoo(&["compare", "--baseline", &s(&b), "--candidate", &s(&c)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("101 of 105 (96.19%; baseline 105, candidate 101; at least 95.00%)"),
        "{stdout}"
    );
    for (share, code) in [("0.99", Some(1)), ("99%", Some(1)), ("96%", Some(0))] {
        let out = modelzoo(&[
            "compare",
            "--baseline",
            &s(&b),
            "--candidate",
            &s(&c),
            "--min-coverage",
            share,
        ]);
        assert_eq!(out.status.code(), code, "{share}");
    }
    for bad in ["150%", "most", "-1"] {
        let out = modelzoo(&[
            "compare",
            "--baseline",
            &s(&b),
            "--candidate",
            &s(&c),
            &format!("--min-coverage={bad}"),
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--min-coverage"));
    }

    // A build-in model's epoch summaries and an NLP model's CSV.
    let epochs = |name: &str, scale: f64| {
        let mut s = String::from("[INFO] Creating model with 100 output classes.\n");
        for e in 0..10 {
            let l = (4.0 - 0.3 * e as f64) * scale;
            writeln!(s, "==== Epoch {e}/9 ====\nEpoch[{e}]: train_loss {l:.4} acc1 {:.2} | val_loss {:.4} acc1 {:.2} lr 0.1", 10.0 + e as f64, l, 9.0 + e as f64).unwrap();
        }
        let p = t.path().join(name);
        fs::write(&p, s).unwrap();
        p
    };
    let (eb, ec) = (
        epochs("cuda_epochs.log", 1.0),
        epochs("sdaa_epochs.log", 1.003),
    );
    let out = modelzoo(&["compare", "--baseline", &s(&eb), "--candidate", &s(&ec)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("(10 values of train_loss for rank 0")
            && stdout.contains("the default metric fell back to `train_loss`")
            && stdout.contains("val_acc1 last value"),
        "{stdout}"
    );
    let out = modelzoo(&[
        "compare",
        "--baseline",
        &s(&eb),
        "--candidate",
        &s(&ec),
        "--metric",
        "train.loss",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let csv = |name: &str, scale: f64| {
        let mut s = String::from("step,loss\n");
        for i in 1..=50 {
            writeln!(s, "{i},{:.6}", 0.5 / i as f64 * scale + 0.01).unwrap();
        }
        let p = t.path().join(name);
        fs::write(&p, s).unwrap();
        p
    };
    let (cb, cc) = (csv("cuda.csv", 1.0), csv("sdaa.csv", 1.001));
    let out = modelzoo(&[
        "compare",
        "--baseline",
        &s(&cb),
        "--candidate",
        &s(&cc),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["metric"], "loss");
    assert_eq!(v["figures"]["steps_compared"], 50);
}

/// Issue #28 through the CLI: identical all-zero loss logs are unusable input (exit 2, what
/// to check), never a PASS printed next to `NaN%`.
#[test]
fn all_zero_logs_exit_2_without_nan() {
    let t = tempfile::tempdir().unwrap();
    let z = log(t.path(), "zero.log", 40, 0.0);
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let out = modelzoo(&["compare", "--baseline", &s(&z), "--candidate", &s(&z)]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        !stdout.contains("NaN") && !stdout.contains("PASS"),
        "{stdout}"
    );
    assert!(
        stderr.contains("is 0 at all 40 compared step(s)"),
        "{stderr}"
    );
}

/// Writes `text` to `dir/name`.
fn text_log(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// Plain-text runs read through the loss-line rule: a run whose last losses are `nan` fails
/// under both rules (loss.py's regex would drop them, and the output says so).
#[test]
fn a_plain_text_run_ending_in_nan_fails_under_both_rules() {
    let t = tempfile::tempdir().unwrap();
    let lines = |last: &str| {
        let mut s = String::new();
        // 100 steps, the last 2 `last`: without them 98% of the steps still pair, above the
        // 95% coverage a stopped run fails on.
        for i in 0..100 {
            let v = if i >= 98 {
                last.to_string()
            } else {
                format!("{:.4}", 2.5 - i as f64 * 0.01)
            };
            writeln!(s, "step {i} loss {v}").unwrap();
        }
        s
    };
    let b = text_log(t.path(), "cuda.log", &lines("1.5000"));
    let c = text_log(t.path(), "sdaa.log", &lines("nan"));
    for rule in ["rel1", "modelzoo-loss"] {
        let out = modelzoo(&[
            "compare",
            "--baseline",
            &b,
            "--candidate",
            &c,
            "--rule",
            rule,
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "--rule {rule}: {stdout}");
        assert!(stdout.contains("NaN or infinite"), "{stdout}");
        if rule == "modelzoo-loss" {
            assert!(
                stdout.contains("loss.py cannot read nan or inf"),
                "{stdout}"
            );
        }
    }
    // A nan at steps only the candidate has (it ran 2 steps more) fails too.
    let longer = text_log(
        t.path(),
        "longer.log",
        &format!("{}step 100 loss nan\nstep 101 loss nan\n", lines("1.5000")),
    );
    let out = modelzoo(&["compare", "--baseline", &b, "--candidate", &longer]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("at a step the other log lacks"), "{stdout}");
    // The same run without the nan passes: the failure is the nan's.
    let ok = text_log(t.path(), "ok.log", &lines("1.5000"));
    let out = modelzoo(&["compare", "--baseline", &b, "--candidate", &ok]);
    assert_eq!(out.status.code(), Some(0));
}

/// pytorch/examples' console lines: mnist's per-step `Loss:` is the series (its test lines
/// are evaluation), dcgan's `Loss_D` and `Loss_G` are each compared and the worst decides;
/// `--loss-key` picks one.
#[test]
fn console_loss_lines_named_losses_and_loss_key() {
    let t = tempfile::tempdir().unwrap();
    let mnist = |scale: f64| {
        let mut s = String::new();
        for e in 1..=2 {
            for b in 0..10 {
                let v = (2.3 - (e * 10 + b) as f64 * 0.05) * scale;
                writeln!(
                    s,
                    "Train Epoch: {e} [{}/60000 ({b}%)]\tLoss: {v:.6}",
                    b * 640
                )
                .unwrap();
            }
            writeln!(
                s,
                "\nTest set: Average loss: {:.4}, Accuracy: 9000/10000 (90%)\n",
                100.0 * scale
            )
            .unwrap();
        }
        s
    };
    let b = text_log(t.path(), "mnist_cuda.log", &mnist(1.0));
    let c = text_log(t.path(), "mnist_sdaa.log", &mnist(1.001));
    let out = modelzoo(&["compare", "--baseline", &b, "--candidate", &c, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["metric"], "loss", "{json}");
    assert_eq!(
        json["baseline"]["values"], 20,
        "the test lines are not steps"
    );

    let dcgan = |g: f64| {
        let mut s = String::new();
        for i in 0..20 {
            let (d, gv) = (1.5 - i as f64 * 0.01, (4.0 - i as f64 * 0.02) * g);
            writeln!(
                s,
                "[0/25][{i}/1563] Loss_D: {d:.4} Loss_G: {gv:.4} D(x): 0.7012 D(G(z)): 0.2100 / 0.1800"
            )
            .unwrap();
        }
        s
    };
    let b = text_log(t.path(), "dcgan_cuda.log", &dcgan(1.0));
    let c = text_log(t.path(), "dcgan_sdaa.log", &dcgan(1.05));
    let out = modelzoo(&["compare", "--baseline", &b, "--candidate", &c]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "Loss_G is 5% off: {stdout}");
    assert!(stdout.contains("`Loss_D` PASS"), "{stdout}");
    assert!(stdout.contains("`Loss_G` FAIL"), "{stdout}");
    assert!(
        stdout.contains("this report is the worst, `Loss_G`"),
        "{stdout}"
    );
    let out = modelzoo(&[
        "compare",
        "--baseline",
        &b,
        "--candidate",
        &c,
        "--loss-key",
        "Loss_D",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// Issue #38 C9: a FIFO given as `--baseline` (and a device as `--candidate`) is refused at
/// once with exit 2 naming it; before, compare blocked on the FIFO forever. Run under
/// `timeout` so a regression fails (exit 124) instead of hanging the suite.
#[test]
fn a_fifo_or_a_device_as_a_log_exits_2_at_once() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("cuda.log");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let ok = log(t.path(), "ok.log", 10, 1.0);
    for (baseline, candidate, named) in [
        (fifo.as_path(), ok.as_path(), "a FIFO"),
        (ok.as_path(), Path::new("/dev/zero"), "a character device"),
    ] {
        let out = Command::new("timeout")
            .arg("30")
            .arg(env!("CARGO_BIN_EXE_modelzoo"))
            .args(["compare", "--baseline"])
            .arg(baseline)
            .arg("--candidate")
            .arg(candidate)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(named), "{stderr}");
    }
}
