//! The public ModelZoo's case file (`PyTorch/contrib/model_config/model.yaml`) on zoos these
//! tests build: a good file gives the command the ModelZoo's check runs, and every rule fires
//! at the line of what breaks it, with what to do.

use std::path::{Path, PathBuf};

use model_config::zoo_cases::{self, detect, IndexFormat, ScalarKind, Violation, ZooCases};

/// A zoo root with one model directory and its run script; returns the case file's path.
fn zoo(root: &Path, text: &str) -> PathBuf {
    let model = root.join("PyTorch/contrib/Classification/Demo/run_scripts");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("run_demo.py"), "print('hi')\n").unwrap();
    let file = root.join(zoo_cases::FILE_IN_ZOO);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    file
}

const GOOD: &str = "\
# The ModelZoo's functional check runs each case.
- case_name: octocat
  desc:
    run_dir: PyTorch/contrib/Classification/Demo
    run_file: run_scripts/run_demo.py
  params:
    nnodes: 1
    nproc_per_node: 4
    batch_size: 32
    model_name: resnet50
    dataset_path: /data/datasets/imagenet
    step: 100
    epoch: 1
    lr: 0.1
    device: sdaa
    autocast: True
    others:
      warmup: 5
      scheduler: cosine
      fused: false
      eps: 1.0e-5
";

fn rules(v: &[Violation]) -> Vec<(usize, &'static str)> {
    v.iter().map(|v| (v.line, v.rule)).collect()
}

#[test]
fn a_good_case_gives_the_modelzoo_command() {
    let tmp = tempfile::tempdir().unwrap();
    let file = zoo(tmp.path(), GOOD);
    let cases = ZooCases::load(&file).unwrap();
    assert_eq!(
        cases.root.as_deref(),
        Some(tmp.path().canonicalize().unwrap().as_path())
    );
    assert_eq!(cases.cases.len(), 1);
    let case = &cases.cases[0];
    assert_eq!(case.case_name, "octocat");
    assert_eq!(case.line, 2);
    assert_eq!(
        cases.run_dir(case),
        tmp.path()
            .canonicalize()
            .unwrap()
            .join("PyTorch/contrib/Classification/Demo")
    );
    assert_eq!(case.param("autocast").unwrap().kind, ScalarKind::Bool);
    assert_eq!(
        case.args("cpu").join(" "),
        "run_scripts/run_demo.py --nnodes 1 --nproc_per_node 4 --batch_size 32 \
         --model_name resnet50 --dataset_path /data/datasets/imagenet --step 100 --epoch 1 \
         --lr 0.1 --device cpu --autocast True --warmup 5 --scheduler cosine --fused False \
         --eps 0.00001"
    );
}

#[test]
fn the_two_schemas_are_told_apart_by_shape() {
    assert_eq!(detect(GOOD), Ok(IndexFormat::ZooCases));
    assert_eq!(detect("models:\n  - name: a\n"), Ok(IndexFormat::ModelYaml));
    assert_eq!(detect("# nothing yet\n"), Ok(IndexFormat::ModelYaml));
    // Not YAML: left to the typed loader, which names the line.
    assert_eq!(detect("models: [\n"), Ok(IndexFormat::ModelYaml));
    let err = detect("- name: a\n  path: b\n").unwrap_err();
    assert!(err.contains("none with `case_name`"), "{err}");
    assert!(detect("just text\n").is_err());
}

/// Every rule, broken once, at the line of what breaks it; all are reported together.
#[test]
fn every_rule_is_checked_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "\
- case_name: alice
  desc:
    run_dir: contrib/Classification/Demo
    run_file: run_demo.py
  params:
    nnodes: two
    nproc_per_node: 0
    batch_size:
    model_name: resnet50
    dataset_path: ''
    step: 100
    epoch: 1
    device: gpu
    autocast: yes
    others:
      lr: 0.2
      milestones: [30, 60]
      tag:
- case_name: alice
  desc:
    run_dir: PyTorch/contrib/Classification/Missing
    run_file: run_scripts/run_demo.py
  params: {nnodes: 1, nproc_per_node: 1, batch_size: 1, model_name: m, dataset_path: /d, step: 1, epoch: 1, lr: 1, device: sdaa, autocast: False}
- case_name: bob
  desc:
    run_dir: PyTorch/contrib/Classification/Demo
    run_file: run_scripts/nope.py
  params:
    nnodes: 1
    nproc_per_node: 1
    batch_size: 1
    model_name: m
    dataset_path: /d
    step: 1
    epoch: 1
    lr: 1
    device: sdaa
    autocast: 'False'
    gpus: 8
";
    let file = zoo(tmp.path(), text);
    let cases = ZooCases::inspect(&file).unwrap();
    assert!(cases.cases.is_empty(), "{:?}", cases.cases);
    assert_eq!(
        rules(&cases.violations),
        vec![
            (3, "zoo-case.run-dir"),
            (4, "zoo-case.run-file"),
            (5, "zoo-case.required"), // lr missing: the params line
            (6, "zoo-case.params"),
            (7, "zoo-case.params"),
            (8, "zoo-case.required"),
            (10, "zoo-case.required"),
            (13, "zoo-case.params"),
            (14, "zoo-case.params"),
            (16, "zoo-case.others"),
            (17, "zoo-case.others"),
            (18, "zoo-case.others"),
            (19, "zoo-case.case-name"),
            (21, "zoo-case.run-dir"),
            (39, "zoo-case.format"),
        ],
        "{:#?}",
        cases.violations
    );
    let msg = |line: usize| {
        cases
            .violations
            .iter()
            .find(|v| v.line == line)
            .unwrap()
            .to_string()
    };
    assert!(
        msg(3).contains("must start with PyTorch/ or PaddlePaddle/"),
        "{}",
        msg(3)
    );
    assert!(
        msg(4).contains("must start with run_scripts/"),
        "{}",
        msg(4)
    );
    assert!(msg(5).contains("`params.lr` is missing"), "{}", msg(5));
    assert!(
        msg(6).contains("`nnodes: two` must be a positive integer"),
        "{}",
        msg(6)
    );
    assert!(msg(7).contains("`nproc_per_node: 0` must be a positive integer"));
    assert!(
        msg(8).contains("`params.batch_size` is empty"),
        "{}",
        msg(8)
    );
    assert!(msg(13).contains("`device: gpu` is not a device; one of: cpu, cuda, sdaa"));
    assert!(
        msg(14).contains("`autocast: yes` must be True or False"),
        "{}",
        msg(14)
    );
    assert!(
        msg(16).contains("`lr` is a standard parameter"),
        "{}",
        msg(16)
    );
    assert!(
        msg(17).contains("`others.milestones` is a list"),
        "{}",
        msg(17)
    );
    assert!(msg(18).contains("`others.tag` is empty"), "{}", msg(18));
    assert!(
        msg(19).starts_with("zoo-case.case-name: case `alice`: listed twice (first on line 1)"),
        "{}",
        msg(19)
    );
    assert!(
        msg(21).contains("does not exist under the zoo root"),
        "{}",
        msg(21)
    );
    assert!(
        msg(39)
            .contains("case `bob`: `params.gpus`: unknown field `gpus`, expected one of `nnodes`")
            && msg(39).contains("`others`")
            && msg(39).contains("put the model's own flags under `params.others`"),
        "{}",
        msg(39)
    );

    // `load` (what ci runs) refuses the file and lists everything with file:line.
    let err = ZooCases::load(&file).unwrap_err().to_string();
    assert!(err.contains("15 problems"), "{err}");
    assert!(
        err.contains(&format!(
            "{}:14: zoo-case.params: case `alice`: `autocast: yes`",
            file.display()
        )),
        "{err}"
    );
}

#[test]
fn a_missing_run_file_and_a_missing_desc_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let good = GOOD.replace("run_demo.py\n", "run_other.py\n");
    let file = zoo(tmp.path(), &good);
    let v = ZooCases::inspect(&file).unwrap().violations;
    assert_eq!(rules(&v), vec![(5, "zoo-case.run-file")]);
    assert!(
        v[0].message.contains("does not exist in run_dir"),
        "{}",
        v[0]
    );

    let no_desc = "- case_name: carol\n  params: {nnodes: 1}\n";
    let file = zoo(tmp.path(), no_desc);
    let v = ZooCases::inspect(&file).unwrap().violations;
    assert_eq!(v[0].rule, "zoo-case.required");
    assert!(v[0].message.contains("`desc` is missing"), "{}", v[0]);
    assert!(
        v.iter()
            .any(|v| v.message.contains("`params.lr` is missing") && v.line == 2),
        "{v:#?}"
    );
}

#[test]
fn a_file_outside_a_zoo_has_no_root() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("cases.yaml");
    std::fs::write(&file, GOOD).unwrap();
    let cases = ZooCases::inspect(&file).unwrap();
    assert_eq!(cases.root, None);
    assert_eq!(rules(&cases.violations), vec![(1, "zoo-case.root")]);
    assert!(cases.violations[0]
        .message
        .contains("keep the file at <zoo root>/PyTorch/contrib/model_config/model.yaml"));
}

#[test]
fn a_fifo_case_file_is_an_error_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("model.yaml");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let err = ZooCases::inspect(&fifo).unwrap_err().to_string();
    assert!(err.contains("not a regular file (a FIFO)"), "{err}");
    let err = model_config::ModelYaml::load(&fifo)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "cannot read {}: not a regular file (a FIFO)",
            fifo.display()
        )
    );
}
