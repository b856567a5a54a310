//! `compare`'s gates and edge cases (issues #13, #15, #25, #28): a run that stops early and
//! runs a few steps apart (--min-coverage), the same file on both sides, a zero final value
//! and an all-zero baseline, loss.py reading the logs differently, lines over 1 MiB, and the
//! noise floor of a second baseline run.

use std::fs;
use std::path::{Path, PathBuf};

use validator::compare::{compare_files, CompareError, NoiseVerdict, Options, Rule};
use validator::report;

/// A log of `steps` values of rank 0 written by `line(iteration, value)`.
fn write_log(path: &Path, values: &[f64], line: impl Fn(usize, f64) -> String) {
    let mut s = String::from("W0515 torchrun banner\n");
    for (it, &v) in values.iter().enumerate() {
        s.push_str(&line(it, v));
        s.push('\n');
    }
    fs::write(path, s).unwrap();
}

fn tcap_line(it: usize, v: f64) -> String {
    format!("TCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: 0 Iteration: {it}  rank : 0  train.loss : {v}  train.ips : 10.0 imgs/s")
}

fn losses(n: usize, scale: f64) -> Vec<f64> {
    (0..n)
        .map(|i| (2.0 * (-(i as f64) / 40.0).exp() + 0.3) * scale)
        .collect()
}

/// issue #13: a candidate that stops early (1 step of 100) passed rel1; it fails unless
/// --allow-partial, and every output says how much was covered (issue #25: of the longer run,
/// whichever it is, against --min-coverage).
#[test]
fn candidate_that_stops_early_fails_unless_allowed() {
    let t = tempfile::tempdir().unwrap();
    let (base, cand) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
    write_log(&base, &losses(100, 1.0), tcap_line);
    write_log(&cand, &losses(1, 1.0), tcap_line);
    for rule in [Rule::Rel1 { threshold: 0.01 }, Rule::ModelzooLoss] {
        let opts = Options {
            rule,
            ..Options::default()
        };
        let cmp = compare_files(&base, &cand, &opts).unwrap();
        assert!(!cmp.verdict.pass, "{rule:?}: {}", cmp.verdict.reason);
        assert!(cmp.verdict.rule_pass, "the rule alone passes the 1 step");
        assert!(
            cmp.verdict.reason.starts_with(
                "1 step(s) compared of the baseline's 100 (1.00%; the candidate has 1), below the 95.00% --min-coverage"
            ) && cmp.verdict.reason.contains("--allow-partial"),
            "{}",
            cmp.verdict.reason
        );
        assert_eq!(cmp.figures.coverage, 0.01);
        let text = report::text(&cmp);
        assert!(
            text.contains("coverage: steps compared of the longer log")
                && text.contains("1 of 100 (1.00%; baseline 100, candidate 1; at least 95.00%)")
                && text.contains("\nFAIL ("),
            "{text}"
        );

        let allowed = compare_files(
            &base,
            &cand,
            &Options {
                allow_partial: true,
                ..opts.clone()
            },
        )
        .unwrap();
        assert!(allowed.verdict.pass, "{}", allowed.verdict.reason);
        assert!(
            allowed.verdict.warnings.iter().any(|w| w.contains(
                "1 step(s) compared of the baseline's 100 (1.00%; the candidate has 1), below the 95.00% --min-coverage; --allow-partial"
            )),
            "{:?}",
            allowed.verdict.warnings
        );
    }

    // Steps missing in the middle count too, and so does a candidate much longer than the
    // baseline (the baseline then is the run that stopped early).
    let gappy: Vec<f64> = losses(100, 1.0);
    let mut s = String::new();
    for (it, v) in gappy.iter().enumerate().filter(|(i, _)| i % 10 != 3) {
        s.push_str(&tcap_line(it, *v));
        s.push('\n');
    }
    fs::write(&cand, s).unwrap();
    let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
    assert!(!cmp.verdict.pass);
    assert!(
        cmp.verdict
            .reason
            .contains("90 step(s) compared of the baseline's 100 (90.00%; the candidate has 90)"),
        "{}",
        cmp.verdict.reason
    );
    write_log(&cand, &losses(120, 1.0), tcap_line);
    let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
    assert!(!cmp.verdict.pass, "{}", cmp.verdict.reason);
    assert!(
        cmp.verdict.reason.starts_with(
            "100 step(s) compared of the candidate's 120 (83.33%; the baseline has 100)"
        ),
        "{}",
        cmp.verdict.reason
    );
    write_log(&cand, &losses(100, 1.0), tcap_line);
    let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    assert_eq!(cmp.figures.coverage, 1.0);
    // 999 of 1000 never reads as 100%.
    assert_eq!(validator::compare::coverage_pct(0.99999), "99.99%");

    // report.md, report.html and summary.json carry the coverage too.
    write_log(&cand, &losses(1, 1.0), tcap_line);
    let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
    let out = t.path().join("report");
    report::write_report(&out, &cmp, "modelzoo compare").unwrap();
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| coverage: steps compared of the longer log | 1 of 100 (1.00%; baseline 100, candidate 1; at least 95.00%) |"),
        "{md}"
    );
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("<td>coverage: steps compared of the longer log</td><td>1 of 100 (1.00%; baseline 100, candidate 1; at least 95.00%)</td>"),
        "{html}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["figures"]["coverage"], 0.01);
    assert_eq!(json["figures"]["baseline_steps"], 100);
    assert_eq!(json["figures"]["candidate_steps"], 1);
    assert_eq!(json["figures"]["min_coverage"], 0.95);
    assert_eq!(json["allow_partial"], false);
    assert_eq!(json["pass"], false);
    assert_eq!(json["verdict"]["rule_pass"], true);
}

/// issue #13: the same file as baseline and candidate passed silently; it is flagged under
/// any spelling of its path (relative detour, symlink, hard link). A copy is not the same
/// file, but identical values are flagged as well.
#[test]
fn same_file_is_flagged_under_any_path() {
    let t = tempfile::tempdir().unwrap();
    let sub = t.path().join("logs");
    fs::create_dir(&sub).unwrap();
    let log = sub.join("train.log");
    write_log(&log, &losses(50, 1.0), tcap_line);
    let detour = t.path().join("logs/../logs/./train.log");
    let symlink = t.path().join("link.log");
    std::os::unix::fs::symlink(&log, &symlink).unwrap();
    let hard = t.path().join("hard.log");
    fs::hard_link(&log, &hard).unwrap();
    for other in [&log, &detour, &symlink, &hard] {
        let cmp = compare_files(&log, other, &Options::default()).unwrap();
        assert!(cmp.same_file, "{}", other.display());
        assert!(
            cmp.verdict
                .warnings
                .iter()
                .any(|w| w.starts_with("baseline and candidate are the same file")),
            "{}: {:?}",
            other.display(),
            cmp.verdict.warnings
        );
        assert!(report::text(&cmp).contains("warning: baseline and candidate are the same file"));
    }
    let copy = t.path().join("copy.log");
    fs::copy(&log, &copy).unwrap();
    let cmp = compare_files(&log, &copy, &Options::default()).unwrap();
    assert!(!cmp.same_file);
    assert!(
        cmp.verdict
            .warnings
            .iter()
            .any(|w| w.contains("every value is identical in the two logs")),
        "{:?}",
        cmp.verdict.warnings
    );
    let other = t.path().join("other.log");
    write_log(&other, &losses(50, 1.001), tcap_line);
    let cmp = compare_files(&log, &other, &Options::default()).unwrap();
    assert!(
        cmp.verdict.warnings.is_empty(),
        "{:?}",
        cmp.verdict.warnings
    );
}

/// issue #13: a final value of 0 (a loss that goes to 0) is judged by the absolute rule,
/// stated in the output, never as "NaN% > 1%".
#[test]
fn zero_final_value_uses_the_absolute_rule() {
    let t = tempfile::tempdir().unwrap();
    let (base, cand) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
    let mut b: Vec<f64> = losses(30, 1.0);
    b[20..].fill(0.0);
    write_log(&base, &b, tcap_line);
    write_log(&cand, &b, tcap_line);
    let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    assert!(
        cmp.verdict
            .reason
            .contains("the baseline's final value is 0")
            && cmp.verdict.reason.contains("absolute rule")
            && cmp.verdict.reason.contains("= 0e0 ≤ 1e-6")
            && !cmp.verdict.reason.contains("NaN"),
        "{}",
        cmp.verdict.reason
    );
    let text = report::text(&cmp);
    assert!(
        text.contains("undefined (baseline final value is 0; absolute error 0e0)"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&report::summary_json(&cmp, "c")).unwrap();
    assert!(json["figures"]["final_rel_err"].is_null());
    assert_eq!(json["figures"]["final_abs_err"], 0.0);

    // The candidate's tail within 1e-6 passes, beyond fails.
    for (tail_value, pass) in [(4e-7, true), (-9e-7, true), (3e-3, false)] {
        let mut c = b.clone();
        c[20..].fill(tail_value);
        write_log(&cand, &c, tcap_line);
        let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
        assert_eq!(
            cmp.verdict.pass, pass,
            "{tail_value}: {}",
            cmp.verdict.reason
        );
        assert!(cmp.verdict.reason.contains("absolute rule"));
    }
}

/// The Python re-creation of loss.py on two logs: (n, pass) or None when it finds no loss
/// (or python3 does not run).
fn python_loss_py(base: &Path, cand: &Path) -> Option<Result<(usize, bool), String>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/bench/compare_losspy.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(base)
        .arg(cand)
        .output()
        .ok()?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !stdout.contains("n=") {
        return Some(Err(String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    let n = stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix("n="))
        .unwrap()
        .parse()
        .unwrap();
    Some(Ok((n, stdout.contains("pass=True"))))
}

/// issue #13: `--rule modelzoo-loss` says when loss.py's own extraction would differ — a
/// RegNet-style spelling it cannot read, a `nan` step it drops, a `-inf` it chokes on — and
/// keeps our verdict.
#[test]
fn modelzoo_loss_says_when_loss_py_would_read_differently() {
    let t = tempfile::tempdir().unwrap();
    let (base, cand) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
    let opts = Options {
        rule: Rule::ModelzooLoss,
        ..Options::default()
    };
    let regnet = |it: usize, v: f64| {
        format!("INFO - 2025-01-01 00:00:00,123 - base_task - TCAPPDLL 2025-01-01 00:00:00.1 - Epoch: 0 Iteration: {it} rank: 0 train.loss : {v} device : cuda:0")
    };
    write_log(&base, &losses(100, 1.0), regnet);
    write_log(&cand, &losses(100, 1.001), regnet);
    let cmp = compare_files(&base, &cand, &opts).unwrap();
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    let lp = cmp.losspy.as_ref().unwrap();
    assert_eq!((lp.outcome.baseline_values, lp.outcome.steps), (0, 0));
    assert!(!lp.same_values);
    let note = lp.note.as_deref().unwrap();
    assert!(
        note.starts_with("loss.py's regex reads 0 values of the baseline and 0 of the candidate (neither `rank : 0  train.loss : ([\\d\\.e-]+)` nor its fallback `loss ([\\d\\.e-]+)` matches anywhere in them)")
            && note.ends_with("; loss.py itself would fail (the mean of no values is NaN)"),
        "{note}"
    );
    assert!(report::text(&cmp).contains("warning: loss.py's regex reads 0 values of the baseline"));
    if let Some(py) = python_loss_py(&base, &cand) {
        assert!(
            py.is_err(),
            "the Python re-creation finds no loss either: {py:?}"
        );
    }

    // A `nan` step: loss.py's regex drops it and pairs the rest; we fail on it.
    let b = losses(100, 1.0);
    write_log(&base, &b, tcap_line);
    write_log(&cand, &b, |it, v| {
        if it == 40 {
            tcap_line(it, f64::NAN).replace("NaN", "nan")
        } else {
            tcap_line(it, v * 1.001)
        }
    });
    let cmp = compare_files(&base, &cand, &opts).unwrap();
    assert!(!cmp.verdict.pass, "{}", cmp.verdict.reason);
    let lp = cmp.losspy.as_ref().unwrap();
    assert_eq!(
        (
            lp.outcome.baseline_values,
            lp.outcome.candidate_values,
            lp.outcome.pass
        ),
        (100, 99, Some(true))
    );
    let note = lp.note.as_deref().unwrap();
    assert!(
        note.contains("loss.py's regex reads 99 values of the candidate where this comparison reads 100 (its pattern cannot read nan or inf: this comparison has 1 such value(s))")
            && note.contains("loss.py would compare 99 steps and pass")
            && note.contains("this comparison fails, and its verdict stands"),
        "{note}"
    );
    if let Some(py) = python_loss_py(&base, &cand) {
        assert_eq!(py, Ok((99, true)));
    }

    // `-inf`: loss.py's regex captures `-`, and float('-') raises.
    write_log(&cand, &b, |it, v| {
        if it == 7 {
            tcap_line(it, f64::NEG_INFINITY)
        } else {
            tcap_line(it, v)
        }
    });
    let cmp = compare_files(&base, &cand, &opts).unwrap();
    assert!(!cmp.verdict.pass);
    let note = cmp.losspy.unwrap().note.unwrap();
    assert!(
        note.contains("loss.py's regex captures `-` as the candidate's value 8 (epoch 0 iteration 7) where this comparison reads -inf")
            && note.contains("loss.py itself would stop with a ValueError: float() rejects `-`, the candidate's value 8"),
        "{note}"
    );

    // Logs loss.py reads exactly as we do, with the same verdict: nothing to say.
    write_log(&cand, &losses(100, 1.002), tcap_line);
    let cmp = compare_files(&base, &cand, &opts).unwrap();
    let lp = cmp.losspy.as_ref().unwrap();
    assert!(lp.same_values && lp.note.is_none(), "{:?}", lp.note);
    assert_eq!(lp.outcome.pass, Some(cmp.verdict.pass));
    // Not under rel1.
    assert!(compare_files(&base, &cand, &Options::default())
        .unwrap()
        .losspy
        .is_none());
}

/// issue #13: lines over 1 MiB (tqdm progress redrawn with `\r` before each record) lost every
/// record with only "no metric records". The records after the last `\r` are read and the
/// long lines are reported; lines that stay too long are named in the error.
#[test]
fn tqdm_lines_over_a_mebibyte_are_read_after_the_last_cr() {
    let t = tempfile::tempdir().unwrap();
    let (base, cand) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
    let v = losses(6, 1.0);
    write_log(&base, &v, tcap_line);
    let bar: String = (0..16_000)
        .map(|i| {
            format!(
                "\r{:3}%|{:<40}| {i}/16000 [00:01<00:01]",
                i / 160,
                "#".repeat(i % 40)
            )
        })
        .collect();
    assert!(bar.len() > dllogger::DEFAULT_MAX_LINE);
    write_log(&cand, &v, |it, x| {
        format!("{bar}\r{}", tcap_line(it, x * 1.002))
    });
    let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
    assert_eq!(cmp.figures.steps_compared, 6);
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    assert_eq!(cmp.candidate.overlong_lines, 6);
    assert!(
        cmp.verdict.warnings.iter().any(|w| w
            .starts_with("6 line(s) of the candidate are longer than the 1 MiB line limit")
            && w.contains("read from the text after their last `\\r`")),
        "{:?}",
        cmp.verdict.warnings
    );

    // No `\r` to cut at: the error says the lines were too long, not just "no records".
    let blob = "x".repeat(dllogger::DEFAULT_MAX_LINE + 10);
    write_log(&cand, &v, |it, x| format!("{blob}{}", tcap_line(it, x)));
    let e = compare_files(&base, &cand, &Options::default()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("candidate log")
            && msg.contains(
                "no metric records in 7 lines: 6 of them are longer than the 1 MiB line limit, even their text after the last `\\r`, and were not read"
            ),
        "{msg}"
    );
}

/// Mean |x−b|/|b| over the first `n` steps, computed here independently of `compare`.
fn mean_rel_dev(b: &[f64], x: &[f64], n: usize) -> f64 {
    (0..n).map(|i| ((x[i] - b[i]) / b[i]).abs()).sum::<f64>() / n as f64
}

/// issue #15 item 6: a second baseline run (another seed) gives the noise floor; the
/// candidate's mean |relative deviation| is judged against factor × the noise run's.
#[test]
fn noise_floor_judges_the_candidate_against_another_seed() {
    let t = tempfile::tempdir().unwrap();
    let path = |n: &str| t.path().join(n);
    let b = losses(100, 1.0);
    let seed2: Vec<f64> = b
        .iter()
        .enumerate()
        .map(|(i, v)| v * (1.0 + 0.004 * (i as f64).sin()))
        .collect();
    let inside: Vec<f64> = b
        .iter()
        .enumerate()
        .map(|(i, v)| v * (1.0 + 0.003 * (i as f64).cos()))
        .collect();
    let outside: Vec<f64> = b.iter().map(|v| v * 1.009).collect();
    for (name, v) in [
        ("cuda.log", &b),
        ("seed2.log", &seed2),
        ("inside.log", &inside),
        ("outside.log", &outside),
    ] {
        write_log(&path(name), v, tcap_line);
    }
    let with_noise = |noise: &str, gate: bool| Options {
        noise: Some(path(noise)),
        noise_gate: gate,
        ..Options::default()
    };
    let noise_dev = mean_rel_dev(&b, &seed2, 100);

    // Inside the noise: within, figures as computed independently (to 1e-12).
    let cmp = compare_files(
        &path("cuda.log"),
        &path("inside.log"),
        &with_noise("seed2.log", true),
    )
    .unwrap();
    let n = cmp.noise.as_ref().unwrap();
    assert_eq!((n.steps, n.steps_compared, n.values), (100, 100, 100));
    assert!((n.noise_dev - noise_dev).abs() < 1e-12, "{}", n.noise_dev);
    let cand_dev = mean_rel_dev(&b, &inside, 100);
    assert!((n.candidate_dev - cand_dev).abs() < 1e-12);
    assert!((n.ratio.unwrap() - cand_dev / noise_dev).abs() < 1e-9);
    assert!(n.ratio.unwrap() < 1.0, "{:?}", n.ratio);
    assert_eq!(n.verdict, NoiseVerdict::Within, "{}", n.reason);
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    let text = report::text(&cmp);
    assert!(
        text.contains("noise floor: within run-to-run variation — candidate deviation"),
        "{text}"
    );

    // Clearly outside (0.9%: passes the 1% rule) — reported as exceeding; the exit verdict
    // stays the rule's unless noise_gate.
    let cmp = compare_files(
        &path("cuda.log"),
        &path("outside.log"),
        &with_noise("seed2.log", false),
    )
    .unwrap();
    let n = cmp.noise.as_ref().unwrap();
    assert_eq!(n.verdict, NoiseVerdict::Exceeds, "{}", n.reason);
    assert!(
        (n.candidate_dev - 0.009).abs() < 1e-12,
        "{}",
        n.candidate_dev
    );
    assert!(n.ratio.unwrap() > 2.0);
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    assert!(report::text(&cmp).contains("noise floor: exceeds run-to-run variation"));
    let gated = compare_files(
        &path("cuda.log"),
        &path("outside.log"),
        &with_noise("seed2.log", true),
    )
    .unwrap();
    assert!(!gated.verdict.pass);
    assert!(gated.verdict.rule_pass);
    assert!(
        gated
            .verdict
            .reason
            .starts_with("--noise-gate: the noise verdict is \"exceeds run-to-run variation\""),
        "{}",
        gated.verdict.reason
    );
    // A larger factor admits it.
    let loose = Options {
        noise_factor: 4.0,
        ..with_noise("seed2.log", true)
    };
    let cmp = compare_files(&path("cuda.log"), &path("outside.log"), &loose).unwrap();
    assert_eq!(cmp.noise.as_ref().unwrap().verdict, NoiseVerdict::Within);
    assert!(cmp.verdict.pass);

    // report.md, report.html and summary.json carry the noise object.
    let dir = path("report");
    report::write_report(&dir, &gated, "modelzoo compare …").unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let nz = &json["noise"];
    assert_eq!(nz["path"], path("seed2.log").to_str().unwrap());
    assert_eq!(nz["steps"], 100);
    assert_eq!(nz["verdict"], "exceeds");
    assert_eq!(nz["gate"], true);
    assert!((nz["noise_dev"].as_f64().unwrap() - noise_dev).abs() < 1e-12);
    assert!(nz["ratio"].as_f64().unwrap() > 2.0);
    assert!(nz["rule"].as_str().unwrap().contains("at most 2 ×"));
    assert_eq!(json["pass"], false);
    let md = fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("| noise deviation, mean \\|n−b\\|/\\|b\\| |"),
        "{md}"
    );
    assert!(
        md.contains("**noise floor: exceeds run-to-run variation"),
        "{md}"
    );
    let html = fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<td>ratio candidate / noise</td>"));
    assert!(html.contains("noise floor: exceeds run-to-run variation"));
    // Without a noise run: no noise rows, `noise` null.
    let plain =
        compare_files(&path("cuda.log"), &path("outside.log"), &Options::default()).unwrap();
    assert!(plain.noise.is_none());
    assert!(!report::text(&plain).contains("noise"));
    let json: serde_json::Value = serde_json::from_str(&report::summary_json(&plain, "c")).unwrap();
    assert!(json["noise"].is_null());
}

/// The noise run's edge cases: zero variation (a copy, or the baseline file itself), a
/// shorter run, an unreadable path, no step in common.
#[test]
fn noise_floor_edge_cases_are_stated() {
    let t = tempfile::tempdir().unwrap();
    let path = |n: &str| t.path().join(n);
    let b = losses(100, 1.0);
    let cand: Vec<f64> = b.iter().map(|v| v * 1.002).collect();
    write_log(&path("cuda.log"), &b, tcap_line);
    write_log(&path("sdaa.log"), &cand, tcap_line);
    write_log(&path("copy.log"), &b, tcap_line);
    let seed2: Vec<f64> = b[..60]
        .iter()
        .enumerate()
        .map(|(i, v)| v * (1.0 + 0.004 * (i as f64).sin()))
        .collect();
    write_log(&path("short.log"), &seed2, tcap_line);
    let run = |noise: PathBuf, gate: bool| {
        compare_files(
            &path("cuda.log"),
            &path("sdaa.log"),
            &Options {
                noise: Some(noise),
                noise_gate: gate,
                ..Options::default()
            },
        )
    };

    // Zero variation: the floor is 0, the ratio undefined (null), no NaN or inf printed.
    for noise in [path("copy.log"), path("cuda.log")] {
        let cmp = run(noise.clone(), false).unwrap();
        let n = cmp.noise.as_ref().unwrap();
        assert_eq!(n.verdict, NoiseVerdict::Undefined);
        assert_eq!(n.noise_dev, 0.0);
        assert!(n.ratio.is_none());
        assert!(n
            .reason
            .contains("the noise floor is zero, so comparing against it is meaningless"));
        let text = report::text(&cmp);
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        assert!(text.contains("undefined (noise deviation is 0)"), "{text}");
        assert!(cmp.verdict.pass, "reported only without the gate");
        let json: serde_json::Value =
            serde_json::from_str(&report::summary_json(&cmp, "c")).unwrap();
        assert!(json["noise"]["ratio"].is_null());
        assert_eq!(json["noise"]["verdict"], "undefined");
        let same_warned = cmp
            .verdict
            .warnings
            .iter()
            .any(|w| w.starts_with("baseline and noise run are the same file"));
        assert_eq!(
            same_warned,
            noise == path("cuda.log"),
            "{:?}",
            cmp.verdict.warnings
        );
        assert_eq!(n.same_file, noise == path("cuda.log"));
        // Under the gate an unmeasurable floor does not pass.
        assert!(!run(noise, true).unwrap().verdict.pass);
    }

    // A shorter noise run: measured on the 60 common steps, and said so.
    let cmp = run(path("short.log"), false).unwrap();
    let n = cmp.noise.as_ref().unwrap();
    assert_eq!((n.steps, n.steps_compared, n.values), (60, 100, 60));
    assert!((n.noise_dev - mean_rel_dev(&b, &seed2, 60)).abs() < 1e-12);
    assert!(
        (n.candidate_dev - 0.002).abs() < 1e-12,
        "{}",
        n.candidate_dev
    );
    assert!(
        cmp.verdict
            .warnings
            .iter()
            .any(|w| w == "the noise run covers 60 of the 100 compared steps: the noise floor is measured on those"),
        "{:?}",
        cmp.verdict.warnings
    );
    assert!(report::text(&cmp).contains("short.log (60 values; 60 of 100 compared steps used)"));

    // Unreadable: an error naming the noise log.
    let err = run(path("missing.log"), false).unwrap_err();
    assert!(
        matches!(err, CompareError::Read { role: "noise", .. }),
        "{err}"
    );
    assert!(err.to_string().starts_with("noise log "), "{err}");
    assert!(err.to_string().contains("missing.log"), "{err}");

    // No step in common with the baseline: an error, not a NaN floor.
    write_log(&path("epoch9.log"), &b, |it, v| {
        format!("TCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: 9 Iteration: {it}  rank : 0  train.loss : {v}  train.ips : 10.0 imgs/s")
    });
    let err = run(path("epoch9.log"), false).unwrap_err();
    assert!(
        matches!(err, CompareError::Read { role: "noise", .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("none of its 100 values of `train.loss` is at a step the baseline and candidate were compared on"),
        "{err}"
    );
}

/// issue #25 item 1: two complete runs of one short-training schedule log a few steps apart
/// (CUDA 105, SDAA 101): at least --min-coverage (95%) of the longer run is compared, so the
/// rule decides; both counts are shown. 1 step of 100 still fails (the early-stop guard).
#[test]
fn runs_a_few_steps_apart_pass_the_default_min_coverage() {
    let t = tempfile::tempdir().unwrap();
    let (base, cand) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
    write_log(&base, &losses(105, 1.0), tcap_line);
    write_log(&cand, &losses(101, 1.002), tcap_line);
    let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    assert!(cmp
        .verdict
        .reason
        .starts_with("|relative error of the final value|"));
    assert!(
        cmp.verdict.warnings.iter().any(|w| w.starts_with(
            "101 step(s) compared of the baseline's 105 (96.19%; the candidate has 101): at least the 95.00% --min-coverage"
        )),
        "{:?}",
        cmp.verdict.warnings
    );
    let text = report::text(&cmp);
    assert!(
        text.contains("101 of 105 (96.19%; baseline 105, candidate 101; at least 95.00%)"),
        "{text}"
    );
    // The other way round (the candidate ran longer) alike.
    let cmp = compare_files(&cand, &base, &Options::default()).unwrap();
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    // A stricter minimum fails it, --allow-partial judges it anyway.
    let strict = Options {
        min_coverage: 0.99,
        ..Options::default()
    };
    let cmp = compare_files(&base, &cand, &strict).unwrap();
    assert!(!cmp.verdict.pass && cmp.verdict.rule_pass);
    assert!(
        cmp.verdict
            .reason
            .contains("below the 99.00% --min-coverage"),
        "{}",
        cmp.verdict.reason
    );
    assert!(
        cmp.next_steps.len() == 1 && cmp.next_steps[0].contains("run the shorter one to the end"),
        "{:?}",
        cmp.next_steps
    );
    // The early-stop guard stays: 1 step of 100 fails by default.
    write_log(&cand, &losses(1, 1.0), tcap_line);
    write_log(&base, &losses(100, 1.0), tcap_line);
    let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
    assert!(!cmp.verdict.pass, "{}", cmp.verdict.reason);
}

/// issue #28: two identical all-zero loss logs passed while printing `NaN%` figures. A
/// baseline that is 0 at every compared step gives no relative figure and says nothing about
/// the port: the comparison is refused (exit 2) with what to check. Where a single relative
/// figure is undefined (an eval metric or a noise run's final value of 0), it says so.
#[test]
fn an_all_zero_baseline_is_refused_and_no_figure_reads_nan() {
    let t = tempfile::tempdir().unwrap();
    let (base, cand) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
    write_log(&base, &[0.0; 30], tcap_line);
    write_log(&cand, &[0.0; 30], tcap_line);
    let e = compare_files(&base, &cand, &Options::default()).unwrap_err();
    assert!(
        matches!(e, CompareError::AllZero { steps: 30, .. }),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with("the baseline's `train.loss` is 0 at all 30 compared step(s)")
            && msg.contains("check that the run computes and logs its loss")
            && msg.contains("--metric"),
        "{msg}"
    );
    write_log(&cand, &[0.5; 30], tcap_line);
    assert!(matches!(
        compare_files(&base, &cand, &Options::default()),
        Err(CompareError::AllZero { .. })
    ));
    for rule in [Rule::ModelzooLoss, Rule::Rel1 { threshold: 0.01 }] {
        let opts = Options {
            rule,
            ..Options::default()
        };
        assert!(compare_files(&base, &cand, &opts).is_err(), "{rule:?}");
    }

    // Not all zero: a PASS whose eval metric ends at 0 in the baseline, with a noise run,
    // shows no `NaN` anywhere.
    let len = 30;
    let with_eval = move |top1: f64| {
        move |it: usize, x: f64| {
            let mut l = tcap_line(it, x);
            if it + 1 == len {
                l.push_str(&format!(
                    "\nTCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: 0 Iteration: {it} Validation Iteration: 0  rank : 0  val.top1 : {top1}"
                ));
            }
            l
        }
    };
    let mut zero_tail = losses(len, 1.0);
    zero_tail[25..].fill(0.0);
    let noise = t.path().join("seed2.log");
    let n: Vec<f64> = zero_tail.iter().map(|v| v * 1.001).collect();
    write_log(&noise, &n, tcap_line);
    write_log(&base, &zero_tail, with_eval(0.0));
    write_log(&cand, &zero_tail, with_eval(0.25));
    let opts = Options {
        noise: Some(noise),
        ..Options::default()
    };
    let cmp = compare_files(&base, &cand, &opts).unwrap();
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
    let out = t.path().join("report");
    report::write_report(&out, &cmp, "modelzoo compare").unwrap();
    let text = report::text(&cmp);
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    for (name, doc) in [("text", &text), ("report.md", &md), ("report.html", &html)] {
        // No figure reads NaN (the words "NaN/infinite" in a warning are not a figure).
        for figure in ["NaN%", "NaN /", "/ NaN", "NaN (", "NaN</td>", "NaN |"] {
            assert!(!doc.contains(figure), "{name} holds `{figure}`: {doc}");
        }
        assert!(
            doc.contains("relative error undefined: the baseline's value is 0"),
            "{name}: {doc}"
        );
    }
}
