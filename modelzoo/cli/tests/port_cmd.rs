//! `modelzoo port` end to end: CUDA-style training scripts of our own (port/tests/data/) are
//! migrated, run on the CPU baseline (their CUDA calls mapped by the port's shim, no GPU here)
//! and on the SDAA emulator, and compared — the real binary, real Python processes.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod port_support;
use port_support::*;

#[test]
fn a_cuda_script_with_amp_and_cudnn_ports_and_passes_on_the_emulator() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("classic", tmp.path());
    let before = std::fs::read(src.join("train.py")).unwrap();
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py", "--steps", "6", "--amp"],
    );
    assert_eq!(p.code, 0, "{}", p.context());
    assert_eq!(p.json["verdict"], "pass", "{}", p.context());
    // The original is untouched; the port is migrated and carries the report.
    assert_eq!(std::fs::read(src.join("train.py")).unwrap(), before);
    let migrated = std::fs::read_to_string(p.out.join("train.py")).unwrap();
    assert!(migrated.contains("import torch_sdaa"), "{migrated}");
    assert!(migrated.contains(".sdaa(non_blocking=True)"), "{migrated}");
    assert!(migrated.contains("torch.sdaa.amp.autocast"), "{migrated}");
    // Code, that is: the docstring's prose about `.cuda()` is left as written.
    let code: Vec<&str> = migrated
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .skip_while(|l| !l.starts_with("import"))
        .collect();
    assert!(!code.iter().any(|l| l.contains(".cuda(")), "{migrated}");
    // Both runs went to the end on what they say, with the same steps.
    let (b, c) = (&p.json["baseline"], &p.json["candidate"]);
    assert!(b["device"].as_str().unwrap().starts_with("cpu"), "{b}");
    assert_eq!(c["device"], "sdaa (emulator)", "{c}");
    assert_eq!(
        (b["steps"].as_u64(), c["steps"].as_u64()),
        (Some(6), Some(6))
    );
    assert_eq!(b["loss_metrics"], serde_json::json!(["loss"]));
    // AMP (the shim saw autocast): judged by the 1% rule, and the report says why.
    assert_eq!(p.json["rule"]["name"], "rel1", "{}", p.context());
    assert!(
        p.json["rule"]["why"].as_str().unwrap().contains("autocast"),
        "{}",
        p.context()
    );
    assert!(p.json["baseline_second"].is_null());
    // Every rewrite is listed with its lines; the cudnn flag is a finding for a person.
    let rewrites = p.json["rewrites"].as_array().unwrap();
    assert!(
        rewrites.iter().any(|r| r["file"] == "train.py"),
        "{rewrites:?}"
    );
    assert!(p.md.contains("| `train.py` |"), "{}", p.md);
    let findings = p.json["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|f| f["rule"] == "cudnn-flag"),
        "{findings:?}"
    );
    // What ran on the device: the emulator's op inventory, and the coverage file.
    let inv = &p.json["inventory"];
    assert!(inv["device_ops"].as_u64().unwrap() > 10, "{inv}");
    let coverage = std::fs::read_to_string(inv["coverage_txt"].as_str().unwrap()).unwrap();
    assert!(
        coverage.contains("'convolution'") || coverage.contains("'_convolution'"),
        "{coverage}"
    );
    assert!(p.md.starts_with("# Port report: PASS"), "{}", p.md);
    assert!(p.stdout.contains("matches the original"), "{}", p.context());
}

#[test]
fn a_device_switch_script_logging_with_tcap_dllogger_ports_and_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("switch", tmp.path());
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py", "--steps", "5", "--log", "loss.json"],
    );
    assert_eq!(p.code, 0, "{}", p.context());
    assert_eq!(
        p.json["baseline"]["loss_metrics"],
        serde_json::json!(["train.loss"]),
        "{}",
        p.context()
    );
    let migrated = std::fs::read_to_string(p.out.join("train.py")).unwrap();
    assert!(
        migrated.contains("\"sdaa\" if torch.sdaa.is_available() else \"cpu\""),
        "{migrated}"
    );
    // Dropout draws the same numbers on both sides: the emulator's random ops use the host
    // generator the CPU baseline uses, so the losses agree closely.
    let fig = &p.json["compare"]["figures"];
    assert!(fig["mean_rel_err_abs"].as_f64().unwrap() < 1e-3, "{fig}");
}

#[test]
fn nccl_data_parallel_under_torchrun_ports_to_tccl_and_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("ddp", tmp.path());
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &[
            "torchrun",
            "--standalone",
            "--nproc_per_node",
            "2",
            "train.py",
            "--steps",
            "4",
        ],
    );
    assert_eq!(p.code, 0, "{}", p.context());
    let migrated = std::fs::read_to_string(p.out.join("train.py")).unwrap();
    assert!(migrated.contains("backend=\"tccl\""), "{migrated}");
    assert_eq!(
        p.json["candidate"]["steps"].as_u64(),
        Some(4),
        "{}",
        p.context()
    );
}

#[test]
fn fp64_on_the_device_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("classic", tmp.path());
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py", "--steps", "3", "--fp64-stats"],
    );
    assert_eq!(p.code, 0, "{}", p.context());
    let fp64 = p.json["inventory"]["fp64_device"].as_array().unwrap();
    assert!(
        fp64.iter().any(|e| e[0].as_str().unwrap().contains("add")),
        "{fp64:?}"
    );
    assert!(p.md.contains("**fp64 (Double) on the device**"), "{}", p.md);
}

#[test]
fn a_script_that_fails_only_on_sdaa_exits_1_with_the_line_of_the_original() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("classic", tmp.path());
    // torch.cuda.memory_stats() becomes torch.sdaa.memory_stats(), which the emulator lacks
    // (and says so); the CPU baseline reports no CUDA memory and runs on.
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py", "--steps", "2", "--memory-stats"],
    );
    assert_eq!(p.code, 1, "{}", p.context());
    assert_eq!(p.json["verdict"], "crash", "{}", p.context());
    let crash = &p.json["candidate"]["crash"];
    assert_eq!(crash["file"], "train.py", "{crash}");
    let original = std::fs::read_to_string(src.join("train.py")).unwrap();
    let line = original
        .lines()
        .position(|l| l.contains("print(torch.cuda.memory_stats())"))
        .unwrap()
        + 1;
    assert_eq!(
        crash["original_line"].as_u64(),
        Some(line as u64),
        "{crash}"
    );
    assert_eq!(crash["original_code"], "print(torch.cuda.memory_stats())");
    assert!(
        crash["error"].as_str().unwrap().contains("memory_stats"),
        "{crash}"
    );
    assert!(p.stdout.contains("crashed on sdaa"), "{}", p.context());
}

#[test]
fn an_op_computed_wrong_on_the_device_is_a_drift() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("classic", tmp.path());
    // The emulator's fault injection: the classifier head's products on sdaa are computed
    // wrong, x·(1 + 5u) with u uniform in [-1, 1] (a constant shift would cancel out in
    // BatchNorm or the softmax).
    let faults = (0..12)
        .map(|i| format!("aten::addmm#{i}:rel=5"))
        .collect::<Vec<_>>()
        .join(";");
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[("SDAA_EMU_PERTURB", &faults)],
        &["python", "train.py", "--steps", "6"],
    );
    assert_eq!(p.code, 1, "{}", p.context());
    assert_eq!(p.json["verdict"], "drift", "{}", p.context());
    // Judged step by step: the first step beyond the tolerance is named, with its figures.
    assert_eq!(p.json["rule"]["name"], "step-by-step", "{}", p.context());
    let fail = &p.json["steps"][0];
    assert_eq!(fail["outcome"], "fail", "{fail}");
    assert!(
        fail["difference"].as_f64() > fail["tolerance"].as_f64(),
        "{fail}"
    );
    assert!(
        p.stdout.contains(&format!(
            "left the original's at {}",
            fail["step"].as_str().unwrap()
        )),
        "{}",
        p.context()
    );
    assert!(p.md.contains("modelzoo diff"), "{}", p.md);
    // The report names the fault injection the port ran under.
    assert_eq!(p.json["candidate"]["fault_injection"], faults.as_str());
    assert!(p.md.contains("**fault injection**"), "{}", p.md);
}

#[test]
fn an_original_that_does_not_run_is_exit_2_and_the_port_is_not_run() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("broken");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("train.py"),
        "import torch\nx = torch.ones(2).cuda()\nraise SystemExit(f'bad data {x.sum()}')\n",
    )
    .unwrap();
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py"],
    );
    assert_eq!(p.code, 2, "{}", p.context());
    assert_eq!(p.json["verdict"], "baseline-failed");
    assert!(p.json["candidate"].is_null());
    assert!(
        p.stdout.contains("the original is broken, not the port"),
        "{}",
        p.context()
    );
}

#[test]
fn no_loss_in_the_output_is_exit_2_saying_how_to_point_at_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("quiet");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("train.py"),
        "import torch\nprint(torch.ones(2).cuda().sum())\n",
    )
    .unwrap();
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py"],
    );
    assert_eq!(p.code, 2, "{}", p.context());
    assert_eq!(p.json["verdict"], "no-baseline-loss");
    assert!(p.stdout.contains("--log FILE"), "{}", p.context());
    // A loss that is 0 at every step (the DDP tutorial's cross-entropy over one class) can show
    // nothing: not judged, never a pass.
    std::fs::write(
        src.join("train.py"),
        "import torch\nfor s in range(3):\n    print(f'step {s} loss {torch.zeros(1).cuda().item():.4f}')\n",
    )
    .unwrap();
    let p = port(
        &src,
        &tmp.path().join("ported-zero"),
        &[],
        &["python", "train.py"],
    );
    assert_eq!(p.code, 2, "{}", p.context());
    assert_eq!(p.json["verdict"], "no-baseline-loss");
    assert!(p.stdout.contains("is 0 at every step"), "{}", p.context());
    // The port still ran, on sdaa, and says so.
    assert!(
        p.stdout
            .contains("The port ran to the end on sdaa (emulator)"),
        "{}",
        p.context()
    );
    // An original whose loss is NaN is not judged either: a port matching it is no pass.
    std::fs::write(
        src.join("train.py"),
        "import torch\nfor s in range(3):\n    print(f'step {s} loss {torch.full((1,), float(\"nan\")).cuda().item()}')\n",
    )
    .unwrap();
    let p = port(
        &src,
        &tmp.path().join("ported-nan"),
        &[],
        &["python", "train.py"],
    );
    assert_eq!(p.code, 2, "{}", p.context());
    assert_eq!(p.json["verdict"], "no-baseline-loss");
    assert!(p.stdout.contains("is NaN at step 0"), "{}", p.context());
}

#[test]
fn a_non_empty_out_is_refused_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("classic", tmp.path());
    let out = tmp.path().join("busy");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("mine.txt"), "keep me").unwrap();
    let p = port(&src, &out, &[], &["python", "train.py"]);
    assert_eq!(p.code, 2, "{}", p.context());
    assert!(p.stderr.contains("--out is not empty"), "{}", p.context());
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().flatten().collect();
    assert_eq!(left.len(), 1);
    assert_eq!(
        std::fs::read_to_string(out.join("mine.txt")).unwrap(),
        "keep me"
    );
    // And an --out inside the project, and no command at all.
    let p = port(&src, &src.join("ported"), &[], &["python", "train.py"]);
    assert_eq!(p.code, 2, "{}", p.context());
    assert!(p.stderr.contains("inside the project"), "{}", p.context());
    let p = port(&src, &tmp.path().join("x"), &[], &[]);
    assert_eq!(p.code, 2, "{}", p.context());
    assert!(p.stderr.contains("no command to run"), "{}", p.context());
    // --recheck of a directory no port judged an original in.
    let p = recheck(&out, &[]);
    assert_eq!(p.code, 2, "{}", p.context());
    assert!(p.stderr.contains("no saved baseline"), "{}", p.context());
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
}

#[test]
fn a_faithful_port_passes_step_by_step_and_an_edit_injecting_a_device_only_bug_fails_on_recheck() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("classic", tmp.path());
    let out = tmp.path().join("ported");
    let p = port(&src, &out, &[], &["python", "train.py", "--steps", "6"]);
    assert_eq!(p.code, 0, "{}", p.context());
    assert_eq!(p.json["rule"]["name"], "step-by-step", "{}", p.context());
    // The original ran twice, each run in a fresh copy in the work dir; DST stays clean.
    let second = &p.json["baseline_second"];
    assert_eq!(second["exit_code"], 0, "{second}");
    for run in [&p.json["baseline"], second, &p.json["candidate"]] {
        let dir = PathBuf::from(run["dir"].as_str().unwrap());
        assert!(dir.starts_with(out.join(".modelzoo-port/runs")), "{run}");
        assert_eq!(dir.file_name(), src.file_name());
    }
    assert_eq!(p.json["steps"][0]["outcome"], "pass", "{}", p.context());
    assert_eq!(p.json["steps"][0]["steps"], 6);

    // The porter edits the port: the learning rate is scaled by 0.9 on sdaa only. The last
    // steps' mean stays within 1%; the step-by-step verdict names step 1 (step 0's loss is
    // computed before the first update).
    let train = out.join("train.py");
    let code = std::fs::read_to_string(&train).unwrap();
    let edited = code.replace(
        "lr=0.05,",
        "lr=0.05 * (0.9 if next(model.parameters()).device.type == \"sdaa\" else 1.0),",
    );
    assert_ne!(code, edited);
    std::fs::write(&train, &edited).unwrap();
    let r = recheck(&out, &[]);
    assert_eq!(r.code, 1, "{}", r.context());
    assert_eq!(r.json["verdict"], "drift", "{}", r.context());
    assert_eq!(r.json["recheck"], true);
    assert_eq!(
        r.json["compare"]["verdict"]["pass"],
        true,
        "{}",
        r.context()
    );
    let fail = &r.json["steps"][0];
    assert_eq!(fail["step"], "step 1", "{fail}");
    assert!(r.stdout.contains("at step 1: original "), "{}", r.context());
    assert!(
        r.md.starts_with("# Port report: FAIL: the port drifted"),
        "{}",
        r.md
    );
    // The edit is the porter's: never migrated or overwritten again.
    assert_eq!(std::fs::read_to_string(&train).unwrap(), edited);
    // A fresh port still wants a new --out, and says how to recheck.
    let again = port(&src, &out, &[], &["python", "train.py"]);
    assert_eq!(again.code, 2, "{}", again.context());
    assert!(again.stderr.contains("--recheck"), "{}", again.context());

    // --baseline-log: the log of a "CUDA" run (here the original's console of the first port)
    // is the baseline; the original is not run and the 1% rule applies, said so.
    let cuda_log = tmp.path().join("cuda.log");
    std::fs::copy(out.join(".modelzoo-port/baseline.log"), &cuda_log).unwrap();
    let b = port_with(
        &src,
        &tmp.path().join("from-log"),
        &["--baseline-log", cuda_log.to_str().unwrap()],
        &[],
        &["python", "train.py", "--steps", "6"],
    );
    assert_eq!(b.code, 0, "{}", b.context());
    assert_eq!(b.json["rule"]["name"], "rel1", "{}", b.context());
    assert!(b.json["rule"]["why"]
        .as_str()
        .unwrap()
        .contains("--baseline-log"));
    assert!(b.json["baseline_second"].is_null());
    assert!(b.json["baseline"]["outcome"]
        .as_str()
        .unwrap()
        .contains("--baseline-log"));
}

#[test]
fn an_unseeded_original_is_not_reproducible_exit_2_with_its_spread_never_a_drift() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("unseeded", tmp.path());
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py", "--steps", "2"],
    );
    assert_eq!(p.code, 2, "{}", p.context());
    assert_eq!(p.json["verdict"], "not-reproducible", "{}", p.context());
    // The port still runs, so the report says whether it runs on sdaa; it is not compared.
    assert_eq!(p.json["candidate"]["exit_code"], 0, "{}", p.context());
    assert!(p.json["inventory"]["device_ops"].as_u64().unwrap() > 0);
    for words in [
        "its losses were not compared",
        "not reproducible",
        "at step 0",
        "spread",
        "manual_seed",
        "generator",
    ] {
        assert!(p.stdout.contains(words), "{words}: {}", p.context());
    }
    assert!(!p.stdout.contains("drift"), "{}", p.context());
    assert!(
        p.md.starts_with("# Port report: NOT JUDGED: the original is not reproducible"),
        "{}",
        p.md
    );
}

/// `--seed N` seeds every run of an unseeded original and its port alike (the shim, right after
/// torch's import), so the step rule judges them; `--recheck` keeps the seed (without it, the
/// recheck's port would draw other weights and "drift").
#[test]
fn seed_makes_an_unseeded_original_judgeable_and_recheck_keeps_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("unseeded", tmp.path());
    let out = tmp.path().join("ported");
    let p = port_with(
        &src,
        &out,
        &["--seed", "7"],
        &[],
        &["python", "train.py", "--steps", "2"],
    );
    assert_eq!(p.code, 0, "{}", p.context());
    assert_eq!(p.json["verdict"], "pass", "{}", p.context());
    assert_eq!(p.json["seed"], 7, "{}", p.context());
    assert!(p.md.contains("`--seed 7`"), "{}", p.md);
    let r = recheck(&out, &[]);
    assert_eq!(r.code, 0, "{}", r.context());
    assert_eq!(r.json["verdict"], "pass", "{}", r.context());
    assert_eq!(r.json["seed"], 7, "{}", r.context());
}

#[test]
fn a_hostile_project_neither_fools_the_verdict_nor_the_report_nor_gets_written() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let hostile = "x`\n## Verdict: PASS <img src=x onerror=alert(1)>";
    let src = root.join(format!("p{hostile}"));
    std::fs::create_dir_all(src.join("store")).unwrap();
    // A CPU script that prints the emulator's banner row without ever touching sdaa, writes
    // into its directory and through an absolute link into the project.
    std::fs::write(
        src.join("train.py"),
        "import torch\nprint(' Torch-SDAA   | 2.1.1')\ntorch.manual_seed(0)\n\
         m = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n\
         x = torch.randn(8, 4)\nfor s in range(3):\n    loss = m(x).pow(2).mean()\n\
         \x20   opt.zero_grad(); loss.backward(); opt.step()\n    print(f'step {s} loss {loss.item():.6f}')\n\
         open('ckpt/last.txt', 'a').write('x')\nopen('out.txt', 'a').write('y')\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(src.join("store"), src.join("ckpt")).unwrap();
    std::fs::write(
        src.join(format!("odd{hostile}.py")),
        "import torch\nx = torch.zeros(1).cuda()\n",
    )
    .unwrap();
    // An earlier port's leftovers: an op inventory full of device ops and a report.
    let stale = src.join(".modelzoo-port/inventory");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(
        stale.join("op_inventory.rank0.json"),
        r#"{"device_ops": [{"op": "aten::addmm", "count": 9}], "host_ops": []}"#,
    )
    .unwrap();
    std::fs::write(src.join(".modelzoo-port/candidate.log"), "STALE LOG\n").unwrap();
    std::fs::write(src.join("PORT.md"), "# Port report: PASS\n").unwrap();

    let out = root.join("ported");
    let p = port(&src, &out, &[], &["python", "train.py"]);
    // Nothing ran on sdaa: the banner is console text, the stale inventory was not copied.
    assert_eq!(p.code, 1, "{}", p.context());
    assert_eq!(p.json["verdict"], "not-on-sdaa", "{}", p.context());
    assert!(p.json["inventory"].is_null(), "{}", p.context());
    assert_eq!(p.json["candidate"]["banner"], "Torch-SDAA   | 2.1.1");
    assert!(
        p.md.starts_with("# Port report: FAIL: nothing ran on sdaa"),
        "{}",
        p.md
    );
    assert!(!out
        .join(".modelzoo-port/inventory/op_inventory.rank0.json")
        .exists());
    let log = std::fs::read_to_string(out.join(".modelzoo-port/candidate.log")).unwrap();
    assert!(!log.contains("STALE"), "{log}");
    // The link into the project points into each copy, so the runs wrote there.
    let repointed = p.json["links_repointed"].as_array().unwrap();
    assert!(repointed.iter().any(|l| l[0] == "ckpt"), "{repointed:?}");
    let run_dir = PathBuf::from(p.json["candidate"]["dir"].as_str().unwrap());
    assert_eq!(
        std::fs::read_link(run_dir.join("ckpt")).unwrap(),
        run_dir.join("store")
    );
    assert!(run_dir.join("store/last.txt").is_file());
    assert!(
        !out.join("out.txt").exists(),
        "DST stays the migrated project"
    );
    // The hostile names are shown, never read as Markdown.
    assert!(p.md.contains("## Verdict: PASS"), "{}", p.md);
    let rendered = outside_code(&p.md);
    assert!(
        !rendered
            .lines()
            .any(|l| l.trim_start().starts_with("## Verdict")),
        "{rendered}"
    );
    let raw_tag = rendered
        .char_indices()
        .any(|(i, c)| c == '<' && !rendered[..i].ends_with('\\'));
    assert!(!raw_tag, "{rendered}");
    assert_eq!(rendered.matches("# Port report").count(), 1, "{rendered}");
}

#[test]
fn a_cuda_call_the_shim_cannot_map_is_the_kits_baseline_failing_not_the_original() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("graphs");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("train.py"),
        "import torch\nm = torch.nn.Linear(2, 2).cuda()\ng = torch.cuda.CUDAGraph()\n",
    )
    .unwrap();
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py"],
    );
    assert_eq!(p.code, 2, "{}", p.context());
    assert_eq!(p.json["verdict"], "kit-baseline-failed", "{}", p.context());
    for words in [
        "kit's CPU baseline failed",
        "CUDAGraph",
        "train.py:3",
        "--baseline-device cuda",
        "--baseline-log",
    ] {
        assert!(p.stdout.contains(words), "{words}: {}", p.context());
    }
    assert!(
        !p.stdout.contains("the original is broken"),
        "{}",
        p.context()
    );
}

#[test]
fn a_script_printing_no_loss_is_judged_by_the_losses_backward_saw() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("silent");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("train.py"),
        "import torch\ntorch.manual_seed(0)\nm = torch.nn.Linear(4, 1).cuda()\n\
         opt = torch.optim.SGD(m.parameters(), lr=0.1)\nx = torch.randn(8, 4).cuda()\n\
         for s in range(3):\n    loss = m(x).pow(2).mean()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n",
    )
    .unwrap();
    let p = port(
        &src,
        &tmp.path().join("ported"),
        &[],
        &["python", "train.py"],
    );
    assert_eq!(p.code, 0, "{}", p.context());
    assert_eq!(
        p.json["baseline"]["loss_metrics"],
        serde_json::json!(["backward.loss"]),
        "{}",
        p.context()
    );
    assert_eq!(p.json["steps"][0]["steps"], 3, "{}", p.context());
    assert!(p.md.contains("backward.loss"), "{}", p.md);
}

#[test]
fn loss_key_picks_one_of_the_named_losses_and_recheck_keeps_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("gan");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("train.py"),
        "import torch\ntorch.manual_seed(0)\nm = torch.nn.Linear(4, 1).cuda()\n\
         opt = torch.optim.SGD(m.parameters(), lr=0.1)\nx = torch.randn(8, 4).cuda()\n\
         for s in range(3):\n    loss = m(x).pow(2).mean()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n\
         \x20   print(f'[{s}/3] Loss_D: {loss.item():.4f} Loss_G: {2 * loss.item():.4f}')\n",
    )
    .unwrap();
    let out = tmp.path().join("ported");
    let p = port_with(
        &src,
        &out,
        &["--loss-key", "Loss_G"],
        &[],
        &["python", "train.py"],
    );
    assert_eq!(p.code, 0, "{}", p.context());
    assert_eq!(
        p.json["baseline"]["loss_metrics"],
        serde_json::json!(["Loss_G"]),
        "{}",
        p.context()
    );
    let r = recheck(&out, &[]);
    assert_eq!(r.code, 0, "{}", r.context());
    assert_eq!(r.json["steps"][0]["metric"], "Loss_G", "{}", r.context());
}

/// Issue #38 C9/D12: a command that replaces its console log with a FIFO hung port (deaf to
/// SIGTERM, blocked reading it). The console is opened non-blocking and refused: port ends,
/// exit 2, saying the console is a FIFO. Under `timeout`, so a regression fails.
#[test]
fn a_console_replaced_by_a_fifo_is_not_waited_on() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("fifo");
    std::fs::create_dir_all(&src).unwrap();
    // The run's directory is <out>/.modelzoo-port/runs/<run>/fifo/; its console is
    // <out>/.modelzoo-port/<run>.log.
    std::fs::write(
        src.join("run.sh"),
        "echo 'step 0 loss 1.0'\necho 'step 1 loss 0.9'\nfor f in ../../../*.log; do rm -f \"$f\"; mkfifo \"$f\"; done\n",
    )
    .unwrap();
    let out = tmp.path().join("ported");
    let o = Command::new("timeout")
        .arg("120")
        .arg(env!("CARGO_BIN_EXE_modelzoo"))
        .arg("port")
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .args([
            "--baseline-device",
            "cpu",
            "--timeout",
            "60",
            "--",
            "sh",
            "run.sh",
        ])
        .env_remove("SDAA_EMU_PERTURB")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stdout.contains("a FIFO"), "{stdout}\n{stderr}");
}

/// `modelzoo bisect` of port/tests/data/bisect_step/train.py on the emulator against its CPU
/// run (written to `base`), in `work`; returns exit status, stdout and bisect.json.
fn bisect(tmp: &Path, label: &str, env: &[(&str, &str)], extra: &[&str]) -> (i32, String, Value) {
    let script = project("bisect_step").join("train.py");
    let base = tmp.join("base.log");
    if !base.exists() {
        let o = Command::new(modelzoo_testkit::venv_python())
            .arg(&script)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", modelzoo_testkit::output_text(&o));
        std::fs::write(&base, &o.stdout).unwrap();
    }
    let work = tmp.join(label);
    let mut c = Command::new(env!("CARGO_BIN_EXE_modelzoo"));
    c.arg("bisect")
        .arg("--baseline")
        .arg(&base)
        .arg("--work-dir")
        .arg(&work)
        .args(["--timeout", "300", "--", "python"])
        .arg(&script)
        .args(["--device", "sdaa"])
        .args(extra)
        .env_remove("TORCH_SDAA_BANNER")
        .env_remove("SDAA_EMU_PERTURB")
        .env_remove("TORCH_SDAA_FALLBACK_OPS");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let json = std::fs::read_to_string(work.join("bisect.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let text = modelzoo_testkit::output_text(&o);
    (o.status.code().unwrap_or(-1), text, json)
}

/// The end-to-end proof of `modelzoo bisect`: two ops computed wrong on every call among the
/// script's candidates; it finds exactly those two, within 2·2·log2(n)+4 runs, cutting the
/// failing trials short, and prints the environment line.
#[test]
fn bisect_finds_exactly_the_two_perturbed_ops_of_a_python_script() {
    let tmp = tempfile::tempdir().unwrap();
    let perturb = "aten::addmm:rel=0.3;aten::threshold_backward:rel=0.5";
    let (code, text, json) = bisect(tmp.path(), "two", &[("SDAA_EMU_PERTURB", perturb)], &[]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(json["outcome"], "found", "{text}");
    let mut ops: Vec<&str> = json["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    ops.sort();
    assert_eq!(ops, ["aten::addmm", "aten::threshold_backward"], "{text}");
    assert_eq!(json["minimal"], true);
    let n = json["candidates"].as_array().unwrap().len() as f64;
    let runs = json["runs"].as_u64().unwrap() as f64;
    assert!(n >= 5.0, "{json}");
    assert!(
        runs <= 2.0 * 2.0 * n.log2() + 4.0,
        "{runs} runs for {n} candidates"
    );
    let trials = json["trials"].as_array().unwrap();
    assert!(trials.iter().any(|t| t["cut_short"] == true), "{text}");
    assert!(
        text.contains("TORCH_SDAA_FALLBACK_OPS=addmm,threshold_backward"),
        "{text}"
    );
}

/// With nothing wrong: nothing to bisect (one run, exit 1); with a bug in the script's own
/// device path: said plainly (exit 1), after the run with every candidate on the CPU.
#[test]
fn bisect_says_nothing_to_bisect_and_names_a_device_only_bug() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, text, json) = bisect(tmp.path(), "none", &[], &[]);
    assert_eq!(
        (code, &json["outcome"], &json["runs"]),
        (1, &Value::from("nothing-to-bisect"), &Value::from(1)),
        "{text}"
    );
    assert!(text.contains("nothing to bisect"), "{text}");
    let (code, text, json) = bisect(tmp.path(), "bug", &[], &["--device-bug"]);
    assert_eq!(
        (code, &json["outcome"]),
        (1, &Value::from("device-only-bug")),
        "{text}"
    );
    assert_eq!(json["runs"], 2, "{text}");
    assert!(
        text.contains("a device-only bug in the script itself"),
        "{text}"
    );
}

/// A project whose middle layer is its own CUDA extension (never built here): without `--op`
/// the original is not called broken; with `--op` both sides run (the twin on the baseline, the
/// porter's implementation on the port), a subtly wrong implementation fails at step 0, and the
/// right one passes on recheck.
#[test]
fn a_custom_cuda_op_is_routed_by_op_on_each_side() {
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_project("custom_op", tmp.path());
    let cmd = ["python", "train.py", "--steps", "4"];
    let p = port(&src, &tmp.path().join("unrouted"), &[], &cmd);
    assert_eq!(p.code, 2, "{}", p.context());
    assert_eq!(p.json["verdict"], "extension-not-built", "{}", p.context());
    let summary = p.json["summary"].as_str().unwrap();
    assert!(summary.contains("ScaledTanhCUDA"), "{summary}");
    assert!(
        summary.contains("ops.scaled_tanh:scaled_tanh_pytorch"),
        "{summary}"
    );
    assert!(p.json["candidate"].is_null(), "{}", p.context());

    let out = tmp.path().join("routed");
    let p = port_with(
        &src,
        &out,
        &["--op", "ScaledTanhFunction=sdaa_ops:scaled_tanh"],
        &[("SCALED_TANH_BROKEN", "1")],
        &cmd,
    );
    assert_eq!(p.code, 1, "{}", p.context());
    assert_eq!(p.json["verdict"], "drift", "{}", p.context());
    let routed = |side: &str| p.json[side]["ops_routed"]["ScaledTanhFunction"].clone();
    assert_eq!(
        routed("baseline")["impl"],
        "ops.scaled_tanh:scaled_tanh_pytorch"
    );
    assert_eq!(routed("baseline")["calls"], 4);
    // The original's second run computes the routed op in float64: the step rule's noise is
    // the op's rounding (the port runs another implementation of it).
    assert_eq!(
        routed("baseline_second")["float64"],
        true,
        "{}",
        p.context()
    );
    assert!(routed("baseline")["float64"].is_null(), "{}", p.context());
    assert!(routed("candidate")["float64"].is_null(), "{}", p.context());
    assert!(
        p.json["rule"]["why"].as_str().unwrap().contains("float64"),
        "{}",
        p.context()
    );
    assert_eq!(routed("candidate")["impl"], "sdaa_ops:scaled_tanh");
    assert!(
        p.md.contains("| `ScaledTanhFunction` | `ops.scaled_tanh:scaled_tanh_pytorch` (4 calls) |"),
        "{}",
        p.md
    );

    let p = recheck(&out, &[]);
    assert_eq!(p.code, 0, "{}", p.context());
    assert_eq!(
        p.json["candidate"]["ops_routed"]["ScaledTanhFunction"]["calls"],
        4
    );
}
