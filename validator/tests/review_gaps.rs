//! The review's second pass (issue #41): report headers, camel-case device logs, README
//! commands that cannot run, Dockerfiles, run outputs, shebangs and the commands run scripts
//! build in string literals — each on a fixture of its own in the shape of the real files.

use std::fs;
use std::path::PathBuf;

use validator::layout::{DirReport, Options, Validator};
use validator::review;

mod common;
use common::*;

/// Issue #41: the reports' headers read "1 warning", not "1 warnings", and show neither the
/// reviewer's install path of the binary nor absolute output paths under the working directory.
#[test]
fn report_headers_count_in_the_right_number_and_show_no_absolute_paths() {
    use validator::layout::{Finding, ModelKind};
    let one = |rule: &'static str| DirReport {
        dir: PathBuf::from("Classification/Demo"),
        kind: ModelKind::Python,
        findings: vec![Finding {
            path: PathBuf::from("Classification/Demo/README.md"),
            line: None,
            rule,
            message: "m".into(),
        }],
        compared: Vec::new(),
    };
    let cwd = std::env::current_dir().unwrap();
    let command = format!(
        "/home/reviewer/.cargo/bin/modelzoo validate --md={} --html {} --all {} /elsewhere/zoo",
        cwd.join("out/r.md").display(),
        cwd.join("out/r.html").display(),
        cwd.display()
    );
    let reports = vec![one("paths.link")];
    let md = review::report::markdown(&reports, &command);
    assert!(
        md.contains(
            "1 directory checked: 0 clean, 1 with violations — 0 errors, 1 warning, 0 info."
        ),
        "{md}"
    );
    assert!(
        md.contains("modelzoo validate --md=out/r.md --html out/r.html --all . /elsewhere/zoo"),
        "{md}"
    );
    assert!(
        !md.contains("/home/reviewer") && !md.contains(&cwd.display().to_string()),
        "{md}"
    );
    let html = review::report::html(&[one("paths.command"), one("paths.command")], &command);
    assert!(html.contains("2 directories checked"), "{html}");
    assert!(
        html.contains(">2 errors</span>") && html.contains(">0 warnings</span>"),
        "{html}"
    );
    assert!(!html.contains("/home/reviewer"), "{html}");
}

/// Issue #41: `--all` found no model in a build-in directory that ships only its logs, named
/// `rexnetCifar100Cuda.log` / `rexnetCifar100Sdaa.log`, and such pairs were never compared.
#[test]
fn build_in_camel_case_logs_are_a_model_and_a_compared_pair() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("PyTorch/build-in/Classification/ReXNet");
    let sdaa = sdaa_values(1.2);
    write(&d.join("rexnetCifar100Cuda.log"), tcap_log(&cuda_values()));
    write(&d.join("rexnetCifar100Sdaa.log"), tcap_log(&sdaa));
    let mut v = Validator::new(&Options::default())
        .unwrap()
        .with_review(true);
    let reports = v.check_tree(t.path()).unwrap();
    assert_eq!(reports.len(), 1, "{reports:#?}");
    assert_eq!(reports[0].dir, d);
    let pairs = &reports[0].compared;
    assert_eq!(pairs.len(), 1, "{pairs:#?}");
    assert_eq!(
        pairs[0].source,
        review::PairSource::Logs {
            cuda: d.join("rexnetCifar100Cuda.log"),
            sdaa: d.join("rexnetCifar100Sdaa.log"),
        }
    );
    let (mre, _) = figures(&cuda_values(), &sdaa);
    assert!(
        (pairs[0].mean_relative_error - mre).abs() < 1e-9 && !pairs[0].pass,
        "{:?} vs {mre}",
        pairs[0]
    );
}

/// Issue #41: README commands that cannot run — a script named with no `python` in front
/// (its script and config absent), and `mim install -e .` where there is no package to build.
#[test]
fn readme_commands_that_cannot_run_are_named() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "MaskFormer");
    let text = fs::read_to_string(d.join("README.md")).unwrap();
    let text = text.replace(
        "```\npip install -r requirements.txt\n```",
        "```\npip install -r requirements.txt\nmim install -e .\n```\n```\nrun_MaskFormer.py --config configs/maskformer.py\n```",
    );
    write(&d.join("README.md"), &text);
    let line = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let r = check(&d);
    let found = of(&r, "paths.command");
    let readme = d.join("README.md").display().to_string();
    let run = line("run_MaskFormer.py --config");
    for want in [
        format!("{readme}:{run}: runs `run_MaskFormer.py` with no `python` in front"),
        format!("{readme}:{run}: the script it runs, `run_MaskFormer.py` does not exist"),
        format!("{readme}:{run}: the file it reads, `configs/maskformer.py` does not exist"),
        format!(
            "{readme}:{}: the setup.py (or pyproject.toml) its editable install (`-e`) builds, `setup.py` does not exist",
            line("mim install -e .")
        ),
    ] {
        assert!(found.iter().any(|f| f.starts_with(&want)), "{want}\n{found:#?}");
    }
    assert_eq!(found.len(), 4, "{found:#?}");
    // With a package there, and the script run through python, nothing is said.
    write(&d.join("pyproject.toml"), "[project]\nname = \"m\"\n");
    write(&d.join("run_MaskFormer.py"), "print(1)\n");
    write(&d.join("configs/maskformer.py"), "x = 1\n");
    write(
        &d.join("README.md"),
        text.replace(
            "\nrun_MaskFormer.py --config",
            "\npython run_MaskFormer.py --config",
        ),
    );
    let r = check(&d);
    assert!(of(&r, "paths.command").is_empty(), "{:#?}", r.findings);
}

/// Issue #41: a Dockerfile that cannot build what it promises, committed run outputs and a
/// license header pasted above the shebang.
#[test]
fn dockerfiles_run_outputs_and_shebangs() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "YOLOv5");
    write(
        &d.join("docker/Dockerfile"),
        "FROM sdaa/torch:2.4\n# deps\nCOPY requirements.txt /w/\nADD --chown=1 \\\n    docker/extra.txt /w/\nCOPY --from=build /x /x\nRUN pip install -r /w/requirements.txt\nFROM ubuntu:22.04\n",
    );
    write(&d.join("models/train2/weights/best.pt"), b"\x80\x02");
    write(&d.join("yolov5s.pth"), b"\x80\x02");
    write(
        &d.join("run_scripts/start.sh"),
        "# Copyright (c) 2023 Ultralytics. Licensed under the AGPL\n#!/bin/bash\necho hi\n",
    );
    write(
        &d.join("utils/tool.py"),
        "#!/usr/bin/env python\n# Copyright x\nimport os\n",
    );
    let r = check(&d);
    let docker = of(&r, "docker.file");
    let file = d.join("docker/Dockerfile").display().to_string();
    assert_eq!(docker.len(), 2, "{docker:#?}");
    assert!(
        docker[0].starts_with(&format!("{file}:4: `ADD docker/extra.txt`: `docker/extra.txt` is neither beside the Dockerfile nor in the model directory")),
        "{docker:#?}"
    );
    assert!(
        docker[1].starts_with(&format!("{file}:8: ends with a second `FROM ubuntu:22.04`")),
        "{docker:#?}"
    );
    let junk = of(&r, "zoo.junk");
    assert!(
        junk.iter().any(|j| j.contains(
            "models/train2: run outputs (a numbered training run's directory) (a directory)"
        )),
        "{junk:#?}"
    );
    assert!(
        junk.iter()
            .any(|j| j.contains("yolov5s.pth: a checkpoint or weights file")),
        "{junk:#?}"
    );
    // The checkpoint inside the reported run directory is not listed again.
    assert!(!junk.iter().any(|j| j.contains("best.pt")), "{junk:#?}");
    let shebang = of(&r, "zoo.shebang");
    assert_eq!(shebang.len(), 1, "{shebang:#?}");
    assert!(
        shebang[0].starts_with(&format!(
            "{}:2: the shebang `#!/bin/bash` is on line 2",
            d.join("run_scripts/start.sh").display()
        )),
        "{shebang:#?}"
    );
    // Fixed: the file copied exists and the last FROM is gone.
    write(&d.join("docker/extra.txt"), "x\n");
    write(
        &d.join("docker/Dockerfile"),
        "FROM sdaa/torch:2.4\nCOPY requirements.txt /w/\nADD docker/extra.txt /w/\n",
    );
    assert!(of(&check(&d), "docker.file").is_empty());
}

/// Issue #41: the command a run script builds in a string literal is checked as test.sh's:
/// its config must exist, and its process count must agree with the README's one-card claim.
#[test]
fn commands_in_run_script_literals_are_checked() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    let text = fs::read_to_string(d.join("README.md"))
        .unwrap()
        .replace("该模型支持单机四卡。", "该模型支持单机单卡。")
        .replace(
            "python run_demo.py --nproc_per_node 4",
            "python run_demo.py --nproc_per_node 1",
        );
    write(&d.join("README.md"), &text);
    write(
        &d.join("run_scripts/run_demo.py"),
        "import os\nfrom argument import parse_args\n# os.system(\"python old.py\")\nos.system(\"torchrun --nproc_per_node 4 ../train.py --config configs/demo.py\")\nsubprocess.run(f\"python ../train.py --epoch {args.epoch}\", shell=True)\n",
    );
    let r = check(&d);
    let claim = d.join("README.md").display().to_string();
    let cards = of(&r, "cards.claim");
    let said = text.lines().position(|l| l.contains("单机单卡")).unwrap() + 1;
    assert!(
        cards.iter().any(|c| c.starts_with(&format!("{claim}:{said}: says one card"))
            && c.contains("runs run_demo.py, which starts 4 processes (run_scripts/run_demo.py:4: `--nproc_per_node 4`)")),
        "{cards:#?}"
    );
    let paths = of(&r, "paths.command");
    assert_eq!(paths.len(), 1, "{paths:#?}");
    assert!(
        paths[0].starts_with(&format!(
            "{}:4: the file it reads, `configs/demo.py` does not exist (looked for in run_scripts/, looked for in the model directory)",
            d.join("run_scripts/run_demo.py").display()
        )),
        "{paths:#?}"
    );
    // With the config there and one process, the run script agrees with the README.
    write(&d.join("configs/demo.py"), "x = 1\n");
    write(
        &d.join("run_scripts/run_demo.py"),
        "import os\nos.system(\"torchrun --nproc_per_node 1 ../train.py --config configs/demo.py\")\n",
    );
    let r = check(&d);
    assert!(of(&r, "paths.command").is_empty(), "{:#?}", r.findings);
    assert!(
        !of(&r, "cards.claim")
            .iter()
            .any(|c| c.contains("runs run_demo.py")),
        "{:#?}",
        r.findings
    );
}

/// Issue #41: a model filed under a category of another task (the public ModelZoo's
/// distilbert and bisenetv1 under Classification, TinyLlama under Detection) is named; a
/// directory of its category's task is not, even when its README mentions other tasks.
#[test]
fn a_model_filed_under_another_tasks_category_is_named() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let category = |dir: &std::path::Path| of(&check(dir), "zoo.category");

    let d = model(root, "distilbert");
    let f = category(&d);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].contains("filed under Classification, but its name `distilbert` names the `distilbert` family: it is a language model")
            && f[0].contains("move it to NLP/distilbert"),
        "{f:?}"
    );

    // The run script's imports, whatever the directory's name.
    let d = model(root, "m");
    write(
        &d.join("run_scripts/run_demo.py"),
        "from argument import parse_args\nimport torch\nfrom transformers import AutoTokenizer, BertForMaskedLM\n",
    );
    let f = category(&d);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].contains("run_scripts/run_demo.py:3: ")
            && f[0].contains("imports `BertForMaskedLM` from transformers: it is a language model"),
        "{f:?}"
    );

    // A segmentation model under Classification, a language model under Detection (build-in).
    let d = model(root, "bisenetv1");
    assert!(category(&d)[0]
        .contains("`bisenetv1` names the `bisenet` family: it is a segmentation model"));
    let llama = root.join("PyTorch/build-in/Detection/TinyLlama");
    write(
        &llama.join("README.md"),
        "# TinyLlama\nPretraining a 1.1B Llama.\n",
    );
    assert!(category(&llama)[0].contains("filed under Detection, but its name `TinyLlama`"));

    // Right directories: a classifier whose README names downstream detection and segmentation
    // and a tokenizer; models of their categories' tasks; a category of several tasks; a
    // directory outside the ModelZoo layout.
    let d = model(root, "Swin-Transformer");
    write(
        &d.join("README.md"),
        common::readme(
            "Swin-Transformer",
            "Swin serves as a backbone for object detection (COCO mAP) and semantic segmentation.",
        ),
    );
    write(
        &d.join("tok.py"),
        "from transformers import CLIPTokenizer\n",
    );
    assert_eq!(category(&d), Vec::<String>::new());
    for dir in [
        root.join("PyTorch/contrib/NLP/bert"),
        root.join("PyTorch/contrib/Segmentation/BiseNetv2"),
        root.join("PyTorch/contrib/Semantic_Segmentation/unet3d"),
        root.join("PyTorch/build-in/Detection/yolov4"),
        root.join("PyTorch/contrib/MultiModal/BLIP"),
        root.join("models/Classification/bert"),
    ] {
        write(&dir.join("README.md"), "# model\n");
        assert_eq!(category(&dir), Vec::<String>::new(), "{}", dir.display());
    }
}

/// A README `cd` into this model's own run_scripts/ when the directory lacks run_scripts/ names
/// the right directory: it was reported as "not this model's directory (that is <the same
/// path>)" on the public ModelZoo's DaNet and nonlocal_net. The commands after it are looked for
/// there instead; a cd naming another directory is still paths.cd's.
#[test]
fn cd_into_this_models_missing_subdirectory_is_not_a_wrong_cd() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    fs::remove_dir_all(d.join("run_scripts")).unwrap();
    let r = check(&d);
    assert!(of(&r, "paths.cd").is_empty(), "{:#?}", r.findings);
    let cmd = of(&r, "paths.command");
    assert!(
        cmd.iter().any(|c| c.contains(
            "README.md:18: the script it runs, `run_demo.py` does not exist (looked for in run_scripts/)"
        )),
        "{cmd:#?}"
    );
    write(
        &d.join("README.md"),
        readme("Demo", "").replace(
            "Classification/Demo/run_scripts",
            "Classification/demo/run_scripts",
        ),
    );
    let cd = of(&check(&d), "paths.cd");
    assert_eq!(cd.len(), 1, "{cd:#?}");
    assert!(
        cd[0].contains("(that is <ModelZoo_path>/PyTorch/contrib/Classification/Demo;"),
        "{cd:#?}"
    );
}

/// A fence line with an info string (`   ```bash`) inside a fenced block is content, not its
/// end (CommonMark): the public ModelZoo's build-in readmes open with ```` ```markdown ````,
/// and the README's `### 2.4 启动训练` after the block's real end was read as inside code, so
/// readme.sections listed "start training" as missing.
#[test]
fn a_fence_line_with_an_info_string_does_not_close_a_block() {
    let t = tempfile::tempdir().unwrap();
    let d = model(t.path(), "Demo");
    write(
        &d.join("README.md"),
        "```markdown\n## 1. 模型概述\nDemo.\n### 2.2 构建环境\n   ```bash\n   conda activate torch_env\n```\n### 2.4 启动训练\n```bash\npython run_demo.py --nproc_per_node 4 --model_name demo --epoch 1 --batch_size 32 --device sdaa\n```\n",
    );
    let sections = of(&check(&d), "readme.sections");
    assert_eq!(sections.len(), 1, "{sections:#?}");
    assert!(sections[0].contains("model introduction"), "{sections:#?}");
    assert!(!sections[0].contains("start training"), "{sections:#?}");
}
