//! The review's cross-file and zoo-wide rules on model directories these tests write (in the
//! shapes the public ModelZoo's directories have): a complete, consistent directory is clean;
//! each rule fires on the fault it describes, and the fix clears it.

use std::fs;

use validator::layout::{Options, Severity, Validator};
use validator::review;

mod common;
use common::*;

#[test]
fn a_consistent_model_directory_is_clean_and_its_pair_compared() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    let r = check(&d);
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert_eq!(r.compared.len(), 1);
    let p = &r.compared[0];
    assert_eq!((p.steps, p.read_as, p.pass), (20, "loss.py", true));
    assert!((p.mean_relative_error - 0.001).abs() < 1e-9);
    // The library default is the layout rules alone (what `modelzoo ci` runs).
    let plain = Validator::new(&Options::default())
        .unwrap()
        .check_dir(&d)
        .unwrap();
    assert!(plain.compared.is_empty());
}

#[test]
fn imports_local() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    write(
        &d.join("train.py"),
        format!("{TRAIN_PY}from datautils import MyTrainDataset\n"),
    );
    write(&d.join("utils/data.py"), "from .samplers import Sampler\n");
    let r = check(&d);
    let found = of(&r, "imports.local");
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].contains("train.py:10: `from datautils import MyTrainDataset`: no `datautils.py` or `datautils/`"), "{found:#?}");
    assert!(
        found[1].contains("utils/data.py:1:") && found[1].contains("utils/samplers.py"),
        "{found:#?}"
    );
    assert_eq!(r.findings[0].severity(), Severity::Error);
    // The module added, or its package listed in a requirements file (any of them): clean.
    write(&d.join("datautils.py"), "class MyTrainDataset: pass\n");
    write(&d.join("utils/data.py"), "from .sampler import Sampler\n");
    assert_clean(&d);
    fs::remove_file(d.join("datautils.py")).unwrap();
    write(&d.join("run_scripts/requirements.txt"), "datautils==0.1\n");
    assert_clean(&d);
}

#[test]
fn paths_command_cd_and_link() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    let text = fs::read_to_string(d.join("README.md")).unwrap();
    let text = text
        .replace(
            "Classification/Demo/run_scripts",
            "Classification/demo/run_scripts",
        )
        .replace("./run_scripts/loss.jpg", "./image/loss.jpg");
    write(&d.join("README.md"), &text);
    write(
        &d.join("run_scripts/test.sh"),
        TEST_SH.replace(
            "--device sdaa 2>&1",
            "--device sdaa --config ../configs/demo.yaml 2>&1",
        ),
    );
    fs::remove_file(d.join("run_scripts/cuda.log")).unwrap();
    let r = check(&d);
    let cd = of(&r, "paths.cd");
    assert_eq!(cd.len(), 1, "{:#?}", r.findings);
    assert!(cd[0].contains("README.md:14: `cd <ModelZoo_path>/PyTorch/contrib/Classification/demo/run_scripts` is not this model's directory (that is <ModelZoo_path>/PyTorch/contrib/Classification/Demo/run_scripts"), "{cd:#?}");
    let link = of(&r, "paths.link");
    assert_eq!(link.len(), 1, "{link:#?}");
    assert!(
        link[0].contains("README.md:25: links to `./image/loss.jpg`"),
        "{link:#?}"
    );
    let cmd = of(&r, "paths.command");
    assert_eq!(cmd.len(), 2, "{cmd:#?}");
    assert!(cmd[0].contains("test.sh:6: the file it reads, `../configs/demo.yaml` does not exist (looked for in run_scripts/)"), "{cmd:#?}");
    assert!(
        cmd[1].contains("test.sh:10: the file it reads, `cuda.log`"),
        "{cmd:#?}"
    );
    // With the right cd, the README's script is looked for where the cd goes.
    write(
        &d.join("README.md"),
        readme("Demo", "").replace("run_demo.py", "run_other.py"),
    );
    let r = check(&d);
    let cmd = of(&r, "paths.command");
    assert!(
        cmd.iter().any(|c| c.contains("README.md:18: the script it runs, `run_other.py` does not exist (looked for in run_scripts/)")),
        "{cmd:#?}"
    );
}

#[test]
fn paths_are_followed_through_script_variables() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    // test.sh names its files through $script_path: the model's files are found, a missing
    // config is named; an unknown variable leaves the path unchecked.
    write(
        &d.join("run_scripts/test.sh"),
        "script_path=$(dirname $(readlink -f \"$0\"))\nconfig_file=\"$script_path/cfg/demo.py\"\ntrain_file=\"$script_path/run_demo.py\"\ncd $script_path/\ntorchrun --master_port=29500 $train_file $config_file --launcher pytorch --nproc_per_node 4 | tee sdaa.log\npython $UNKNOWN/x.py\n",
    );
    let r = check(&d);
    let cmd = of(&r, "paths.command");
    assert_eq!(cmd.len(), 1, "{cmd:#?}");
    assert!(
        cmd[0].contains("test.sh:5: the file it reads,") && cmd[0].contains("cfg/demo.py"),
        "{cmd:#?}"
    );
    write(&d.join("run_scripts/cfg/demo.py"), "x = 1\n");
    assert_clean(&d);
}

#[test]
fn commands_consistent() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    write(&d.join("run_scripts/run_emanet.py"), "import os\n");
    write(
        &d.join("run_scripts/test.sh"),
        TEST_SH.replace("run_demo.py", "run_emanet.py"),
    );
    let r = check(&d);
    let found = of(&r, "commands.consistent");
    assert_eq!(found.len(), 1, "{:#?}", r.findings);
    assert!(found[0].contains("test.sh:6: trains with `run_emanet.py` but the README's training command runs `run_demo.py` (README.md:18)"), "{found:#?}");
    // Same script, another config.
    write(&d.join("configs/a.py"), "");
    write(&d.join("configs/shufflenet.py"), "");
    write(
        &d.join("README.md"),
        readme("Demo", "").replace(
            "--device sdaa\n",
            "--device sdaa --config ../configs/a.py\n",
        ),
    );
    write(
        &d.join("run_scripts/test.sh"),
        TEST_SH.replace(
            "--device sdaa 2>&1",
            "--device sdaa --config ../configs/shufflenet.py 2>&1",
        ),
    );
    let found = of(&check(&d), "commands.consistent");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0]
            .contains("trains with config `shufflenet.py` but the README's command uses `a.py`"),
        "{found:#?}"
    );
    write(
        &d.join("run_scripts/test.sh"),
        TEST_SH.replace(
            "--device sdaa 2>&1",
            "--device sdaa --config ../configs/a.py 2>&1",
        ),
    );
    assert!(of(&check(&d), "commands.consistent").is_empty());
}

#[test]
fn cards_claim() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    let (c, s) = (cuda_values(), sdaa_values(1.001));
    let (mre, mae) = figures(&c, &s);
    write(
        &d.join("README.md"),
        readme("Demo", &results_text(mre, mae)).replace("该模型支持单机四卡", "该模型支持单机单卡"),
    );
    let r = check(&d);
    let found = of(&r, "cards.claim");
    assert_eq!(found.len(), 1, "{:#?}", r.findings);
    assert!(found[0].contains("README.md:16: says one card (`2. 运行训练。该模型支持单机单卡。`) but the command it introduces (line 18) starts 4 processes (`--nproc_per_node 4`)"), "{found:#?}");
    // test.sh starting another count than the README's command.
    let d = model(t.path(), "Demo2");
    write(
        &d.join("run_scripts/test.sh"),
        TEST_SH.replace("--nproc_per_node 4", "--nproc-per-node=1"),
    );
    let found = of(&check(&d), "cards.claim");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("test.sh:6: starts 1 process (`--nproc_per_node 1`) where the README's training command (README.md:18) starts 4"), "{found:#?}");
}

#[test]
fn logs_device() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    let cuda = fs::read_to_string(d.join("run_scripts/cuda.log")).unwrap();
    write(&d.join("run_scripts/cuda.log"), format!("{BANNER}{cuda}"));
    let found = of(&check(&d), "logs.device");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains(
            "cuda.log:4: named as a CUDA log but it is an SDAA run: the Torch-SDAA banner"
        ),
        "{found:#?}"
    );
    write(
        &d.join("run_scripts/cuda.log"),
        format!("torchrun multigpu.py --device sdaa\n{cuda}"),
    );
    assert!(of(&check(&d), "logs.device")[0].contains("cuda.log:1:"));
    // An SDAA log of a run on the CPU.
    write(&d.join("run_scripts/cuda.log"), &cuda);
    let sdaa = fs::read_to_string(d.join("run_scripts/sdaa.log")).unwrap();
    write(
        &d.join("run_scripts/sdaa.log"),
        format!("Device: cpu\n{sdaa}"),
    );
    let found = of(&check(&d), "logs.device");
    assert!(
        found.len() == 1
            && found[0]
                .contains("sdaa.log:1: named as an SDAA log but it is a run on another device"),
        "{found:#?}"
    );
    write(&d.join("run_scripts/sdaa.log"), &sdaa);
    assert_clean(&d);
}

#[test]
fn logs_identical() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    // The same loss values under another header (Demo's cuda.log is the SDAA run's body).
    let s = sdaa_values(1.001);
    write(
        &d.join("run_scripts/cuda.log"),
        format!("# baseline\n{}", tcap_log(&s)),
    );
    let found = of(&check(&d), "logs.identical");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("cuda.log: holds the same 20 loss values as run_scripts/sdaa.log"),
        "{found:#?}"
    );
    // Byte for byte.
    fs::copy(
        d.join("run_scripts/sdaa.log"),
        d.join("run_scripts/cuda.log"),
    )
    .unwrap();
    let r = check(&d);
    let found = of(&r, "logs.identical");
    assert!(
        found.len() == 1 && found[0].contains("byte-identical to run_scripts/sdaa.log"),
        "{found:#?}"
    );
    assert!(rules(&r).contains(&"logs.device"));
}

#[test]
fn results_figures_verdict_and_signed_pass() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    write(
        &d.join("README.md"),
        readme(
            "Demo",
            &results_text(0.00042223225725652325, 0.06732667000000149),
        ),
    );
    let r = check(&d);
    let found = of(&r, "results.figures");
    assert_eq!(found.len(), 1, "{:#?}", r.findings);
    assert!(
        found[0].contains(
            "README.md:27: quotes MeanRelativeError 0.00042223225725652325 (recomputed: 0.000999"
        ),
        "{found:#?}"
    );
    assert!(
        found[0].contains("on run_scripts/cuda.log and run_scripts/sdaa.log (20 steps"),
        "{found:#?}"
    );
    // Rounded figures that agree to the digits quoted are fine.
    write(
        &d.join("README.md"),
        readme(
            "Demo",
            "MeanRelativeError: 0.0010\nMeanAbsoluteError: 0.0015\n",
        ),
    );
    assert_clean(&d);

    // A verdict of fail.
    let (c, s) = (cuda_values(), sdaa_values(1.2));
    write(
        &d.join("run_scripts/sdaa.log"),
        format!("{BANNER}{}", tcap_log(&s)),
    );
    let (mre, mae) = figures(&c, &s);
    write(
        &d.join("README.md"),
        readme("Demo", &results_text(mre, mae)),
    );
    let found = of(&check(&d), "results.verdict");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("README.md:30: the results say `fail`"),
        "{found:#?}"
    );

    // A pass that holds only through a negative signed mean: SDAA 30% lower.
    let s = sdaa_values(0.7);
    write(
        &d.join("run_scripts/sdaa.log"),
        format!("{BANNER}{}", tcap_log(&s)),
    );
    let (mre, mae) = figures(&c, &s);
    write(
        &d.join("README.md"),
        readme("Demo", &results_text(mre, mae)),
    );
    let r = check(&d);
    assert_eq!(rules(&r), vec!["results.signed-pass"], "{:#?}", r.findings);
    assert!(
        of(&r, "results.signed-pass")[0].contains("passes with a mean relative error of -30.0%")
    );
    assert_eq!(r.findings[0].severity(), Severity::Warning);
}

#[test]
fn results_unverifiable_is_info() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    fs::remove_file(d.join("run_scripts/cuda.log")).unwrap();
    write(
        &d.join("run_scripts/test.sh"),
        TEST_SH.replace(
            "python loss.py --sdaa-log sdaa.log --cuda-log cuda.log\n",
            "",
        ),
    );
    let r = check(&d);
    assert_eq!(rules(&r), vec!["results.unverifiable"], "{:#?}", r.findings);
    assert_eq!(r.findings[0].severity(), Severity::Info);
    assert!(!r.has_violations());
}

#[test]
fn results_constant() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    write(
        &d.join("run_scripts/loss.py"),
        "def compare_loss(a, b):\n    mean_relative_error = 0.00042\n    mean_absolute_error = 0.0001\n    print('pass')\n",
    );
    let found = of(&check(&d), "results.constant");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("loss.py:2: a comparison script that does not compute its figure: `mean_relative_error` is set to the constant 0.00042"), "{found:#?}");
    write(
        &d.join("run_scripts/loss.py"),
        "print(\"MeanRelativeError: 0.00042\")\n",
    );
    assert!(of(&check(&d), "results.constant")[0].contains("loss.py:1: a comparison script that does not compute its figure: it prints the constant 0.00042"));
    // A start value that is then computed is not a constant.
    write(
        &d.join("run_scripts/loss.py"),
        "mre = 0.5\nfor c, s in pairs:\n    mre += (s - c) / c\nprint(\"MeanRelativeError:\", mre)\n",
    );
    assert_clean(&d);
}

#[test]
fn requirements_tree() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    write(
        &d.join("run_scripts/requirements.txt"),
        "numpy\ntorch==2.0.1\ntorch_sdaa @ file:///apps/torch_sdaa-2.1.0-cp310-cp310-linux_x86_64.whl\n",
    );
    let found = of(&check(&d), "requirements.tree");
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].contains("run_scripts/requirements.txt:2: installs the framework: line 2 `torch==2.0.1`, line 3 `torch_sdaa @ file:"), "{found:#?}");
    assert!(found[1].contains("run_scripts/requirements.txt:3: installs from local paths of the author's machine: line 3"), "{found:#?}");
    // The root file: torch is requirements.no-framework's; a local wheel is this rule's.
    fs::remove_file(d.join("run_scripts/requirements.txt")).unwrap();
    write(&d.join("requirements.txt"), "numpy @ file:///croot/numpy_1672336185480/work\ngit+https://github.com/Tecorigin/tcap_dllogger.git\nscipy\n");
    let r = check(&d);
    assert_eq!(rules(&r), vec!["requirements.tree"], "{:#?}", r.findings);
    assert_eq!(r.findings[0].line, Some(1));
}

#[test]
fn zoo_misspelt_names_junk_oversized_and_markers() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    fs::rename(
        d.join("run_scripts/README.md"),
        d.join("run_scripts/ README.md"),
    )
    .unwrap();
    write(&d.join("README.MD"), "# copy\n");
    let r = check(&d);
    let names = of(&r, "zoo.misspelt-name");
    assert_eq!(names.len(), 1, "{names:#?}");
    assert!(
        names[0].contains("run_scripts/ README.md: ` README.md` should be named `README.md`"),
        "{names:#?}"
    );
    // README.MD beside README.md is another file, not a misspelling; alone it is one.
    fs::rename(
        d.join("run_scripts/ README.md"),
        d.join("run_scripts/README.md"),
    )
    .unwrap();
    fs::remove_file(d.join("README.MD")).unwrap();
    fs::rename(d.join("run_scripts"), d.join("run_script")).unwrap();
    let names = of(&check(&d), "zoo.misspelt-name");
    assert!(
        names.len() == 1
            && names[0].contains("run_script: `run_script` should be named `run_scripts`"),
        "{names:#?}"
    );
    fs::rename(d.join("run_script"), d.join("run_scripts")).unwrap();

    write(&d.join("logs/events.out.tfevents.1700000000.host"), b"\0");
    write(&d.join("tools/chromedriver_win.exe"), b"MZ");
    write(&d.join("run_scripts/work_dirs/x/20250101.json"), "{}");
    write(&d.join("wget-log"), "--2025--\n");
    let junk = of(&check(&d), "zoo.junk");
    assert_eq!(junk.len(), 4, "{junk:#?}");
    assert!(
        junk.iter()
            .any(|j| j.contains("work_dirs: training outputs")),
        "{junk:#?}"
    );
    for p in ["logs", "tools", "run_scripts/work_dirs", "wget-log"] {
        let p = d.join(p);
        if p.is_dir() {
            fs::remove_dir_all(p).unwrap();
        } else {
            fs::remove_file(p).unwrap();
        }
    }

    // A sparse file over 100 MiB.
    let big = fs::File::create(d.join("weights.bin")).unwrap();
    big.set_len(101 << 20).unwrap();
    let over = of(&check(&d), "zoo.oversized");
    assert!(
        over.len() == 1 && over[0].contains("weights.bin: 101.0 MiB"),
        "{over:#?}"
    );
    big.set_len(100 << 20).unwrap();
    assert!(of(&check(&d), "zoo.oversized").is_empty());
    fs::remove_file(d.join("weights.bin")).unwrap();

    // A third-party file changed for SDAA without the marker.
    let upstream = "# Copyright (c) OpenMMLab. All rights reserved.\nimport torch\n";
    write(
        &d.join("models.py"),
        format!("{upstream}class Net:\n    pass\n"),
    );
    assert_clean(&d);
    write(
        &d.join("models.py"),
        format!("{upstream}device = 'sdaa'\nclass Net:\n    pass\n"),
    );
    let m = of(&check(&d), "zoo.adaptation-marker");
    assert!(
        m.len() == 1 && m[0].contains("models.py:3: carries a third-party copyright notice"),
        "{m:#?}"
    );
    write(
        &d.join("models.py"),
        format!(
            "# Adapted to tecorigin hardware。\n{upstream}device = 'sdaa'\nclass Net:\n    pass\n"
        ),
    );
    assert_clean(&d);
}

#[test]
fn near_duplicates_and_build_in_combined_loss_files_over_a_tree() {
    let t = tempfile::tempdir().unwrap();
    model(t.path(), "MobileNet_V2");
    model(t.path(), "Mobilenet_v2");
    model(t.path(), "ResNet");
    // A build-in directory: a readme, a model file and a combined loss file whose RESULT
    // figures are not its rows' and whose verdict is fail.
    let b = t.path().join("PyTorch/build-in/Classification/ECANet");
    let rows = |v: &[f64]| {
        v.chunks(10)
            .map(|c| {
                c.iter()
                    .map(|x| format!("{x:.6}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (c, s) = (cuda_values(), sdaa_values(1.2));
    write(&b.join("readme.md"), readme("ECANet", ""));
    write(&b.join("ecanet.py"), "import torch\n");
    write(
        &b.join("ecanet_loss.txt"),
        format!(
            "=== CUDA ===\n{}\n\n=== SDAA ===\n{}\n\n=== RESULT ===\nMeanRelativeError: 0.01\nMeanAbsoluteError: 0.02\nRule,mean_relative_error 0.01\nfail mean_relative_error=0.2 <= 0.05 or mean_absolute_error=0.3 <= 0.0002\n",
            rows(&c),
            rows(&s)
        ),
    );
    let mut v = Validator::new(&Options::default())
        .unwrap()
        .with_review(true);
    let reports = v.check_tree(t.path()).unwrap();
    let dirs: Vec<String> = reports
        .iter()
        .map(|r| r.dir.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(dirs, ["ECANet", "MobileNet_V2", "Mobilenet_v2", "ResNet"]);
    for r in &reports[1..3] {
        let found = of(r, "zoo.near-duplicate");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].contains("the same model name as"), "{found:#?}");
    }
    assert!(reports[3].findings.is_empty(), "{:#?}", reports[3].findings);
    let e = &reports[0];
    let figures = of(e, "results.figures");
    assert!(
        figures.len() == 1
            && figures[0]
                .contains("ecanet_loss.txt:10: quotes MeanRelativeError 0.01 (recomputed: 0.2"),
        "{figures:#?}"
    );
    assert!(of(e, "results.verdict")[0].contains("ecanet_loss.txt:13: the results say `fail`"));
    assert!(of(e, "zoo.misspelt-name")[0].contains("`readme.md` should be named `README.md`"));
    assert_eq!(e.compared.len(), 1);
    assert!(matches!(
        e.compared[0].source,
        review::PairSource::Combined { .. }
    ));

    // The reviewer's report: models by severity, findings with file:line, a picture per pair.
    let md = review::report::markdown(&reports, "modelzoo validate --all x");
    let first = md.find("## ").unwrap();
    assert!(
        md[first..].starts_with(&format!("## {}", b.display())),
        "{md}"
    );
    assert!(
        md.contains("| error | `") && md.contains("ecanet_loss.txt:10`"),
        "{md}"
    );
    assert_eq!(md.matches("data:image/svg+xml;base64,").count(), 4, "{md}");
    let html = review::report::html(&reports, "modelzoo validate --all x");
    assert_eq!(html.matches("<svg").count(), 4);
    assert!(html.contains("class=\"error\">error</td>"));
}

#[test]
fn every_review_rule_is_listed_once_with_a_severity() {
    let ids: Vec<&str> = validator::layout::all_rules().map(|r| r.id).collect();
    for r in review::RULES {
        assert_eq!(ids.iter().filter(|i| **i == r.id).count(), 1, "{}", r.id);
    }
    let src = [
        include_str!("../src/review/imports.rs"),
        include_str!("../src/review/paths.rs"),
        include_str!("../src/review/cards.rs"),
        include_str!("../src/review/logs.rs"),
        include_str!("../src/review/constant.rs"),
        include_str!("../src/review/requirements.rs"),
        include_str!("../src/review/zoo.rs"),
        include_str!("../src/review/docker.rs"),
    ]
    .concat();
    let re = regex_lite(&src);
    for id in re {
        assert!(ids.contains(&id.as_str()), "rule {id} not listed");
    }
}

/// Every `"family.name",` string literal in the sources that names a finding's rule.
fn regex_lite(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for family in [
        "imports.",
        "paths.",
        "commands.",
        "cards.",
        "logs.",
        "results.",
        "requirements.",
        "zoo.",
    ] {
        for (at, _) in src.match_indices(&format!("\"{family}")) {
            let rest = &src[at + 1..];
            let end = rest.find('"').unwrap();
            let id = &rest[..end];
            let file_name = [".txt", ".md", ".py", ".sh"]
                .iter()
                .any(|x| id.ends_with(x));
            if !file_name
                && id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '.' || c == '-')
            {
                out.push(id.to_string());
            }
        }
    }
    out
}

/// Files that are not regular files (a FIFO named like a log, a script or a requirements
/// file) are never opened: the review returns, and says nothing it could not read.
#[test]
fn fifos_are_never_opened() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    for f in [
        "run_scripts/cuda.log",
        "train.py",
        "run_scripts/requirements.txt",
        "run_scripts/test.sh",
    ] {
        let p = d.join(f);
        let _ = fs::remove_file(&p);
        assert!(std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap()
            .success());
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let dir = d.clone();
    std::thread::spawn(move || {
        let _ = tx.send(check(&dir));
    });
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the review hung on a FIFO");
    assert!(!rules(&r).contains(&"logs.identical"), "{:#?}", r.findings);
}
