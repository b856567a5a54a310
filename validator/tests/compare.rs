//! `compare` on the real ModelZoo logs (read from ../shared/fixtures, skipped when absent) and
//! on generated pairs with known errors.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use validator::compare::{compare_files, Align, CompareError, Options, Rule};
use validator::report;

fn fixtures() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = root.join("../shared/fixtures/tecorigin-modelzoo");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!("skipping: {} not found", dir.display());
        None
    }
}

/// `train.loss` values of a tcap JSON log, extracted independently of dllogger.
fn json_losses(path: &Path) -> Vec<f64> {
    let re = regex::Regex::new(r"'train\.loss': '([^']+)'").unwrap();
    let text = fs::read_to_string(path).unwrap();
    re.captures_iter(&text)
        .map(|c| c[1].parse().unwrap())
        .collect()
}

#[test]
fn fixture_pair_reproduces_loss_py_figures() {
    let Some(dir) = fixtures() else { return };
    let cuda = dir.join("facial-expression-recognition/cuda_loss.json");
    let sdaa = dir.join("facial-expression-recognition/sdaa_loss.json");
    let opts = Options {
        rule: Rule::ModelzooLoss,
        ..Options::default()
    };
    let cmp = compare_files(&cuda, &sdaa, &opts).unwrap();

    // loss.py: cut to the shorter, pair by position, sequential signed means.
    let (b, c) = (json_losses(&cuda), json_losses(&sdaa));
    let n = b.len().min(c.len());
    assert!(n >= 10, "fixture too short: {n}");
    let mut rel = 0.0;
    let mut diff = 0.0;
    for i in 0..n {
        rel += (c[i] - b[i]) / b[i];
        diff += c[i] - b[i];
    }
    let (rel, diff) = (rel / n as f64, diff / n as f64);
    let f = &cmp.figures;
    assert_eq!(f.steps_compared, n);
    assert!(
        (f.mean_rel_err_signed - rel).abs() <= 1e-12,
        "{} vs {rel}",
        f.mean_rel_err_signed
    );
    assert!(
        (f.mean_diff_signed - diff).abs() <= 1e-12,
        "{} vs {diff}",
        f.mean_diff_signed
    );
    assert_eq!(cmp.verdict.pass, rel <= 0.05 || diff <= 0.0002);
    assert!(cmp
        .verdict
        .warnings
        .iter()
        .any(|w| w.contains("signed means")));
    // cuda_loss.json has no rank key: its records are rank 0.
    assert_eq!(cmp.baseline.ranks_seen, vec![0]);

    // Key alignment pairs the same (epoch, iteration) steps here.
    let keyed = compare_files(&cuda, &sdaa, &Options::default()).unwrap();
    assert_eq!(keyed.figures.steps_compared, n);
    assert_eq!(
        keyed.only_in_baseline + keyed.only_in_candidate,
        b.len() + c.len() - 2 * n
    );
}

#[test]
fn demo_log_selects_ranks_and_survives_glued_lines() {
    let Some(dir) = fixtures() else { return };
    let log = dir.join("demo/sdaa.log");
    for rank in 0..4 {
        let opts = Options {
            rank,
            ..Options::default()
        };
        // The log against itself: every step pairs, zero error.
        let cmp = compare_files(&log, &log, &opts).unwrap();
        assert_eq!(cmp.figures.steps_compared, 8, "rank {rank}");
        assert_eq!(cmp.figures.max_abs_err.value, 0.0);
        assert!(cmp.verdict.pass);
    }
    let r3 = compare_files(
        &log,
        &log,
        &Options {
            rank: 3,
            ..Options::default()
        },
    )
    .unwrap();
    // Rank 3's iteration-0 loss sits in the glued line after rank 0's record.
    assert!(
        r3.pairs.get(0).baseline == 0.6068281531333923,
        "{:?}",
        r3.pairs.get(0)
    );
    let err = compare_files(
        &log,
        &log,
        &Options {
            rank: 7,
            ..Options::default()
        },
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("ranks in the log: [0, 1, 2, 3]"),
        "{err}"
    );
}

/// A tcap stdout log: `steps` iterations of 4 ranks, loss = f(step) * scale for every rank.
fn stdout_log(path: &Path, steps: u64, scale: f64, skip: &[u64]) -> Vec<f64> {
    let mut s = String::from("W0515 torchrun banner\n");
    let mut rank0 = Vec::new();
    for it in 0..steps {
        if skip.contains(&it) {
            continue;
        }
        let base =
            2.5 * (-(it as f64) / 300.0).exp() + 0.1 * ((it as f64) * 0.7).sin().abs() + 0.05;
        for rank in 0..4u32 {
            let loss = base * scale * (1.0 + rank as f64 * 0.01);
            if rank == 0 {
                rank0.push(loss);
            }
            writeln!(
                s,
                "TCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: {} Iteration: {}  rank : {rank}  train.loss : {loss}  train.ips : 10415.7 imgs/s",
                it / 100,
                it % 100
            )
            .unwrap();
        }
    }
    fs::write(path, s).unwrap();
    rank0
}

#[test]
fn known_errors_pass_or_fail_rel1() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().join("cuda.log");
    stdout_log(&base, 300, 1.0, &[]);
    for (scale, pass) in [(1.005, true), (0.995, true), (1.02, false), (0.98, false)] {
        let cand = t.path().join(format!("sdaa_{scale}.log"));
        stdout_log(&cand, 300, scale, &[]);
        let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
        assert_eq!(
            cmp.verdict.pass, pass,
            "scale {scale}: {}",
            cmp.verdict.reason
        );
        assert!(
            (cmp.figures.final_rel_err - (scale - 1.0)).abs() < 1e-9,
            "{}",
            cmp.figures.final_rel_err
        );
        assert!((cmp.figures.mean_rel_err_abs - (scale - 1.0f64).abs()).abs() < 1e-9);
        assert_eq!(cmp.figures.steps_compared, 300);
    }
    // A settable threshold: 2% passes at 3%.
    let cand = t.path().join("sdaa_1.02.log");
    let opts = Options {
        rule: Rule::Rel1 { threshold: 0.03 },
        ..Options::default()
    };
    assert!(compare_files(&base, &cand, &opts).unwrap().verdict.pass);
}

#[test]
fn steps_in_one_log_only_are_counted_and_listed() {
    let t = tempfile::tempdir().unwrap();
    let (base, cand) = (t.path().join("b.log"), t.path().join("c.log"));
    stdout_log(&base, 250, 1.0, &[]);
    stdout_log(&cand, 220, 1.001, &[5, 6, 7, 150]);
    let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
    assert_eq!(cmp.figures.steps_compared, 216);
    assert_eq!(cmp.only_in_baseline, 34);
    assert_eq!(cmp.only_in_candidate, 0);
    let ranges: Vec<String> = cmp
        .only_in_baseline_ranges
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert_eq!(
        ranges,
        vec![
            "epoch 0 iteration 5 .. epoch 0 iteration 7 (3 steps)",
            "epoch 1 iteration 50",
            "epoch 2 iteration 20 .. epoch 2 iteration 49 (30 steps)",
        ]
    );
    let text = report::text(&cmp);
    assert!(
        text.contains("only in baseline: epoch 1 iteration 50"),
        "{text}"
    );

    // Pairing by position instead shifts everything after the gap: the error shows it.
    let by_order = compare_files(
        &base,
        &cand,
        &Options {
            align: Align::Order,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(by_order.figures.steps_compared, 216);
    assert!(by_order.figures.max_rel_err.value > 0.01);
}

#[test]
fn unusable_inputs_say_which_file_and_why() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().join("b.log");
    stdout_log(&base, 20, 1.0, &[]);
    let missing = t.path().join("nope.log");
    let e = compare_files(&base, &missing, &Options::default()).unwrap_err();
    assert!(
        matches!(
            e,
            CompareError::Read {
                role: "candidate",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("nope.log"), "{e}");

    let e = compare_files(
        &base,
        &base,
        &Options {
            metric: "val.top1".into(),
            ..Options::default()
        },
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("metric `val.top1` is absent")
            && e.to_string().contains("train.ips, train.loss"),
        "{e}"
    );

    let text_only = t.path().join("notes.txt");
    fs::write(&text_only, "hello\nworld\n").unwrap();
    let e = compare_files(&text_only, &base, &Options::default()).unwrap_err();
    assert!(e.to_string().starts_with("baseline log"), "{e}");
    assert!(
        e.to_string().contains("no metric records in 2 lines"),
        "{e}"
    );

    // Same metric, disjoint steps.
    let later = t.path().join("later.log");
    let mut s = String::new();
    for it in 0..5 {
        writeln!(
            s,
            "TCAPPDLL 2025-05-15 14:20:10.9 - Epoch: 9 Iteration: {it}  rank : 0  train.loss : 1.0"
        )
        .unwrap();
    }
    fs::write(&later, s).unwrap();
    let e = compare_files(&base, &later, &Options::default()).unwrap_err();
    assert!(
        e.to_string().contains("no common steps") && e.to_string().contains("--align order"),
        "{e}"
    );
}

#[test]
fn eval_metrics_compare_last_values() {
    let t = tempfile::tempdir().unwrap();
    let mk = |name: &str, top1: [f64; 2]| {
        let p = t.path().join(name);
        let mut s = String::new();
        for it in 0..12 {
            writeln!(s, "TCAPPDLL 2025-05-15 14:20:10.9 - Epoch: 0 Iteration: {it}  rank : 0  train.loss : {}", 2.0 - it as f64 * 0.1).unwrap();
        }
        for (e, v) in top1.iter().enumerate() {
            writeln!(s, "TCAPPDLL 2025-05-15 14:20:11.9 - Epoch: {e}  rank : 0  val.top1 : {v}  val.loss : 1.5").unwrap();
        }
        fs::write(&p, s).unwrap();
        p
    };
    let (b, c) = (mk("b.log", [50.0, 76.0]), mk("c.log", [51.0, 75.24]));
    let cmp = compare_files(&b, &c, &Options::default()).unwrap();
    let top1 = cmp
        .eval
        .iter()
        .find(|e| e.metric == "val.top1")
        .expect("val.top1 compared");
    assert_eq!((top1.baseline, top1.candidate), (76.0, 75.24));
    assert!((top1.rel_err + 0.01).abs() < 1e-12, "{}", top1.rel_err);
    assert!(cmp
        .eval
        .iter()
        .any(|e| e.metric == "val.loss" && e.rel_err == 0.0));

    // val.top1 as the compared metric: aligned by epoch.
    let opts = Options {
        metric: "val.top1".into(),
        tail: 1,
        ..Options::default()
    };
    let cmp = compare_files(&b, &c, &opts).unwrap();
    assert_eq!(cmp.figures.steps_compared, 2);
    // Exactly 1% (in decimal) passes rel1's "≤ 1%".
    assert!(cmp.verdict.pass, "{}", cmp.verdict.reason);
}

#[test]
fn report_dir_is_complete_self_contained_and_rewritten() {
    let t = tempfile::tempdir().unwrap();
    let (base, cand) = (t.path().join("b.log"), t.path().join("c.log"));
    stdout_log(&base, 3000, 1.0, &[]);
    stdout_log(&cand, 3000, 1.004, &[]);
    let out = t.path().join("report");
    let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
    report::write_report(
        &out,
        &cmp,
        "modelzoo compare --baseline b.log --candidate c.log",
    )
    .unwrap();
    let mut names: Vec<String> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "curves.svg",
            "rel_error.svg",
            "report.html",
            "report.md",
            "summary.json"
        ]
    );

    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.starts_with("### 训练结果"), "{md}");
    assert!(md.contains("| steps compared | 3000 |"), "{md}");
    assert!(md.contains("**PASS (rel1, threshold 1.0000%)"), "{md}");
    assert!(md.contains("![train.loss curves](curves.svg)"));

    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 2);
    for external in ["src=", "href=\"http", "<script", "<link", "url("] {
        assert!(
            !html.contains(external),
            "report.html refers outside itself: {external}"
        );
    }
    let svg = fs::read_to_string(out.join("curves.svg")).unwrap();
    assert!(
        svg.contains("<polyline") || svg.contains("<path"),
        "no curve drawn"
    );
    // Thinned to at most MAX_PLOT_POINTS per line: the file stays small.
    assert!(svg.len() < 600_000, "curves.svg is {} bytes", svg.len());

    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["pass"], true);
    assert_eq!(json["figures"]["steps_compared"], 3000);
    assert_eq!(json["verdict"]["rule"]["rule"], "rel1");

    // A re-run with a failing candidate replaces every file; no temp files are left behind.
    stdout_log(&cand, 100, 1.05, &[]);
    let cmp = compare_files(&base, &cand, &Options::default()).unwrap();
    report::write_report(&out, &cmp, "again").unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["pass"], false);
    assert_eq!(json["command"], "again");
    assert_eq!(fs::read_dir(&out).unwrap().count(), 5);
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(out.join("report.md"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "report files are readable by all");
}

/// Our modelzoo-loss figures equal the Python re-creation of loss.py's (when python3 runs).
#[test]
fn modelzoo_loss_matches_python_loss_py() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/bench/compare_losspy.py");
    let t = tempfile::tempdir().unwrap();
    let (base, cand) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
    stdout_log(&base, 400, 1.0, &[]);
    // Candidate shorter and noisier: truncation and signed means both matter.
    let mut s = String::new();
    for it in 0..350u64 {
        let loss = 2.0 + ((it * 7919) % 97) as f64 / 1000.0 - 0.03;
        writeln!(s, "TCAPPDLL 2025-05-15 14:20:10.9 - Epoch: 0 Iteration: {it}  rank : 0  train.loss : {loss}  train.ips : 1.0 imgs/s").unwrap();
    }
    fs::write(&cand, s).unwrap();
    let out = match std::process::Command::new("python3")
        .arg(&script)
        .arg(&base)
        .arg(&cand)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            println!("skipping: python3 not runnable ({e})");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let field = |k: &str| -> f64 {
        let v = stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| {
                panic!(
                    "no {k} in {stdout:?} / {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        v.parse().unwrap()
    };
    // The candidate stopped early: judged on its steps only when that is allowed.
    let opts = Options {
        rule: Rule::ModelzooLoss,
        allow_partial: true,
        ..Options::default()
    };
    let cmp = compare_files(&base, &cand, &opts).unwrap();
    assert_eq!(cmp.figures.steps_compared as f64, field("n"));
    assert!((cmp.figures.mean_rel_err_signed - field("mean_rel")).abs() <= 1e-12);
    assert!((cmp.figures.mean_diff_signed - field("mean_diff")).abs() <= 1e-12);
    assert_eq!(cmp.verdict.pass, stdout.contains("pass=True"));
    // Our reading of the logs the way loss.py reads them agrees with the Python re-creation,
    // and finds nothing to report: the same values, the same verdict.
    let lp = cmp
        .losspy
        .as_ref()
        .expect("loss.py check under modelzoo-loss");
    assert_eq!(lp.outcome.steps as f64, field("n"));
    assert!((lp.outcome.mean_rel - field("mean_rel")).abs() <= 1e-12);
    assert!((lp.outcome.mean_diff - field("mean_diff")).abs() <= 1e-12);
    assert!(lp.same_values && lp.note.is_none(), "{:?}", lp.note);
    // Without --allow-partial the stopped run fails, and loss.py's different verdict is said.
    let strict = compare_files(
        &base,
        &cand,
        &Options {
            rule: Rule::ModelzooLoss,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(!strict.verdict.pass);
    if stdout.contains("pass=True") {
        let note = strict.losspy.unwrap().note.expect("verdicts differ");
        assert!(
            note.contains("loss.py would compare 350 steps and pass")
                && note.contains("this comparison fails, and its verdict stands"),
            "{note}"
        );
    }
}

/// A CUDA log in tcap JSON (Python-repr `data`, no rank key) against an SDAA log in tcap stdout
/// lines of 4 ranks and an NVIDIA `DLLL` log: the steps pair across formats.
#[test]
fn logs_in_different_formats_pair_by_step() {
    let t = tempfile::tempdir().unwrap();
    let stdout = t.path().join("sdaa.log");
    let rank0 = stdout_log(&stdout, 150, 1.003, &[]);
    let mut json = String::from("TCAPPDLL {\"timestamp\": \"1\", \"type\": \"METADATA\", \"metric\": \"train.loss\", \"metadata\": {\"unit\": \"\"}}\n");
    let mut dlll = String::new();
    for (it, v) in rank0.iter().enumerate() {
        let b = v / 1.003;
        writeln!(json, "TCAPPDLL {{\"timestamp\": \"1\", \"type\": \"LOG\", \"step\": [{}, {}], \"data\": \"{{'train.loss': '{b}', 'train.ips': '1.0'}}\"}}", it / 100, it % 100).unwrap();
        writeln!(dlll, "DLLL {{\"timestamp\": \"1\", \"datetime\": \"x\", \"elapsedtime\": \"1\", \"type\": \"LOG\", \"step\": [{}, {}], \"data\": {{\"train.loss\": {b}}}}}", it / 100, it % 100).unwrap();
    }
    let (json_path, dlll_path) = (t.path().join("cuda.json"), t.path().join("cuda.dlll"));
    fs::write(&json_path, json).unwrap();
    fs::write(&dlll_path, dlll).unwrap();
    for base in [&json_path, &dlll_path] {
        let cmp = compare_files(base, &stdout, &Options::default()).unwrap();
        assert_eq!(cmp.figures.steps_compared, 150, "{}", base.display());
        assert_eq!(cmp.only_in_baseline + cmp.only_in_candidate, 0);
        assert!(
            (cmp.figures.final_rel_err - 0.003).abs() < 1e-9,
            "{}",
            cmp.figures.final_rel_err
        );
        assert!(cmp.verdict.pass);
    }
}

/// A family of runs: one log per level, tcap stdout lines of 20 steps whose loss decays to
/// `level` (the same shape in every run, so the final values differ exactly by the levels).
fn family(dir: &Path, name: &str, metric: &str, levels: &[f64]) -> Vec<PathBuf> {
    levels
        .iter()
        .enumerate()
        .map(|(i, level)| {
            let path = dir.join(format!("{name}{}.log", i + 1));
            let mut s = String::new();
            for it in 0..20 {
                let v = level + 0.5 * (-(it as f64) / 3.0).exp();
                writeln!(s, "TCAPPDLL 2025-05-15 14:20:10.9 - Epoch: 0 Iteration: {it}  rank : 0  {metric} : {v}").unwrap();
            }
            fs::write(&path, s).unwrap();
            path
        })
        .collect()
}

#[test]
fn runs_welch_judges_families_with_known_spread() {
    use validator::compare::{compare_runs, Goal};
    let t = tempfile::tempdir().unwrap();
    let base_levels = [1.94, 2.00, 2.06, 1.97, 2.03]; // ±3%: wider than the 1% rule
    let base = family(t.path(), "cuda", "train.loss", &base_levels);
    let shifted = |d: f64| base_levels.iter().map(|l| l + d).collect::<Vec<_>>();
    let opts = Options::default();

    // 1.5% worse: every pair fails the 1% rule, but inside the runs' noise the test passes.
    let near = family(t.path(), "near", "train.loss", &shifted(0.03));
    let r = compare_runs(&base, &near, &opts, None).unwrap();
    assert_eq!(r.decided_by, "welch");
    assert!(r.pass, "{}", r.reason);
    assert!(
        !r.pairs_pass && r.pairs.iter().all(|p| !p.pass),
        "{:?}",
        r.pairs
    );
    assert_eq!(r.goal, Goal::Minimize);
    let w = r.test.as_ref().unwrap();
    assert!((w.worse_by - 0.03).abs() < 1e-9, "{w:?}");
    assert!(w.p > ALPHA_TEST && w.p < 0.5, "{w:?}");
    assert!(r.reason.contains("within the runs' noise"), "{}", r.reason);
    let sb = &r.baseline.spread;
    assert_eq!(sb.n, 5);
    assert!((sb.max - sb.min - 0.12).abs() < 1e-9, "{sb:?}");
    assert!(sb.olympic_mean.is_some() && sb.std.unwrap() > 0.04);

    // 10% worse: far outside the noise — FAIL.
    let far = family(t.path(), "far", "train.loss", &shifted(0.2));
    let r = compare_runs(&base, &far, &opts, None).unwrap();
    assert!(!r.pass && r.test.as_ref().unwrap().reject, "{}", r.reason);
    assert!(r.reason.contains("H0 rejected"), "{}", r.reason);

    // Equal families (other files, the same values): PASS.
    let same = family(t.path(), "same", "train.loss", &base_levels);
    let r = compare_runs(&base, &same, &opts, None).unwrap();
    assert!(r.pass && r.test.as_ref().unwrap().p > 0.5, "{}", r.reason);

    // Higher is better (an accuracy, by its name): a lower candidate fails, a higher passes.
    let acc_opts = Options {
        metric: "train.acc1".into(),
        metric_fallback: false,
        ..Options::default()
    };
    let acc = family(t.path(), "acc", "train.acc1", &[70.0, 71.0, 72.0]);
    let lower = family(t.path(), "acclow", "train.acc1", &[60.0, 61.0, 62.0]);
    let higher = family(t.path(), "acchigh", "train.acc1", &[80.0, 81.0, 82.0]);
    let r = compare_runs(&acc, &lower, &acc_opts, None).unwrap();
    assert_eq!(r.goal, Goal::Maximize);
    assert!(!r.pass, "{}", r.reason);
    assert!(compare_runs(&acc, &higher, &acc_opts, None).unwrap().pass);
    // --goal overrides the name: as a loss, the higher candidate is the worse one.
    let r = compare_runs(&acc, &higher, &acc_opts, Some(Goal::Minimize)).unwrap();
    assert!(!r.pass && r.goal_note.contains("--goal"), "{}", r.goal_note);
}

const ALPHA_TEST: f64 = validator::compare::ALPHA;

#[test]
fn runs_refuse_broken_families() {
    use validator::compare::compare_runs;
    let t = tempfile::tempdir().unwrap();
    let base = family(t.path(), "b", "train.loss", &[2.0, 2.01, 1.99]);
    let cand = family(t.path(), "c", "train.loss", &[2.0, 2.01, 1.99]);
    let opts = Options::default();
    // A run given twice would understate the noise: refused (exit 2), naming it.
    let twice = vec![base[0].clone(), base[1].clone(), base[0].clone()];
    let err = compare_runs(&twice, &cand, &opts, None).unwrap_err();
    assert!(err.to_string().contains("given twice"), "{err}");
    // A candidate run that stopped early fails though the test passes.
    let short = t.path().join("short.log");
    fs::write(
        &short,
        "TCAPPDLL 2025-05-15 14:20:10.9 - Epoch: 0 Iteration: 0  rank : 0  train.loss : 2.5\n",
    )
    .unwrap();
    let partial = vec![cand[0].clone(), cand[1].clone(), short.clone()];
    let opts_partial = Options {
        allow_partial: true,
        ..Options::default()
    };
    // (its one pair fails coverage too unless partial runs are allowed)
    let r = compare_runs(&base, &partial, &opts_partial, None).unwrap();
    assert!(
        r.warnings.iter().any(|w| w.contains("short.log")),
        "{:?}",
        r.warnings
    );
    let err_or_fail = compare_runs(&base, &partial, &opts, None).unwrap();
    assert!(
        !err_or_fail.pass && err_or_fail.reason.contains("stopped early"),
        "{}",
        err_or_fail.reason
    );
    // A diverged run fails, whatever the others say.
    let nan = t.path().join("nan.log");
    let mut s = String::new();
    for it in 0..20 {
        let v = if it == 19 {
            "nan".to_string()
        } else {
            "2.0".to_string()
        };
        writeln!(
            s,
            "TCAPPDLL 2025-05-15 14:20:10.9 - Epoch: 0 Iteration: {it}  rank : 0  train.loss : {v}"
        )
        .unwrap();
    }
    fs::write(&nan, s).unwrap();
    let diverged = vec![cand[0].clone(), cand[1].clone(), nan];
    let r = compare_runs(&base, &diverged, &opts, None).unwrap();
    assert!(!r.pass && r.reason.contains("NaN"), "{}", r.reason);
}

#[test]
fn runs_on_the_real_modelzoo_pair_say_the_noise_is_unknown() {
    use validator::compare::{compare_runs, Goal};
    let Some(dir) = fixtures() else { return };
    let cuda = dir.join("facial-expression-recognition/cuda_loss.json");
    let sdaa = dir.join("facial-expression-recognition/sdaa_loss.json");
    let classic = compare_files(&cuda, &sdaa, &Options::default()).unwrap();
    let (b1, c1) = (vec![cuda.clone()], vec![sdaa.clone()]);
    let r = compare_runs(&b1, &c1, &Options::default(), None).unwrap();
    // One run a side: no test, the per-pair rule decides as the classic compare does.
    assert!(r.test.is_none());
    assert_eq!(r.decided_by, "per-pair");
    assert_eq!(r.pass, classic.verdict.pass);
    assert!(
        r.reason.contains("noise is unknown") && r.reason.contains("3 runs a side"),
        "{}",
        r.reason
    );
    // The direction is the log's own METADATA (`GOAL: MINIMIZE`).
    assert_eq!(r.goal, Goal::Minimize);
    assert!(r.goal_note.contains("METADATA"), "{}", r.goal_note);
    // Its final value is the mean of the run's own last 10 values.
    let losses = json_losses(&cuda);
    let last10 = losses[losses.len() - 10..].iter().sum::<f64>() / 10.0;
    assert!((r.baseline.runs[0].final_value - last10).abs() < 1e-12);
    // Two real runs against one: still too few — the per-pair rule on both pairs.
    let r = compare_runs(
        &[cuda.clone(), sdaa.clone()],
        &c1,
        &Options::default(),
        None,
    )
    .unwrap();
    assert_eq!((r.pairs.len(), r.decided_by), (2, "per-pair"));
    assert!(r.reason.contains("too few"), "{}", r.reason);
}
