//! The public ModelZoo's case file (`PyTorch/contrib/model_config/model.yaml`) on zoos these
//! tests build: a good file gives the command the ModelZoo's check runs, and every rule fires
//! at the line of what breaks it, with what to do.

use std::path::{Path, PathBuf};

use model_config::zoo_cases::{
    self, detect, CaseKind, IndexFormat, ScalarKind, Violation, ZooCases,
};

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

/// Issue #38 F16: a case file that is not valid YAML — an integer too large, a duplicate key,
/// an alias bomb — was taken for this repository's schema and reported as the wrong shape
/// (`invalid type: sequence, expected struct RawFile`). It is a case file with a YAML error,
/// named with its line and column.
#[test]
fn a_case_file_that_is_not_valid_yaml_says_so_and_where() {
    let tmp = tempfile::tempdir().unwrap();
    let duplicate = GOOD.replace("    lr: 0.1\n", "    lr: 0.1\n    lr: 0.2\n");
    let bomb = {
        let mut t = String::from("- &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            t.push_str(&format!(
                "- &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        t.push_str("- case_name: octocat\n");
        t
    };
    let huge = GOOD.replace("nnodes: 1", "nnodes: 99999999999999999999999999");
    let unclosed = GOOD.replace("others:\n", "others: {warmup: 5\n");
    for (what, text, line) in [
        // serde_yaml places a duplicate key at the first line of its mapping (`params:`'s
        // first key); the message names the path and the key.
        ("duplicate key", duplicate.as_str(), Some(7)),
        ("unclosed flow mapping", unclosed.as_str(), None),
        ("integer beyond u64", huge.as_str(), None),
        // serde_yaml gives no position for an expansion past its limit.
        ("alias bomb", bomb.as_str(), None),
    ] {
        assert_eq!(detect(text), Ok(IndexFormat::ZooCases), "{what}");
        let file = zoo(tmp.path(), text);
        let cases = ZooCases::inspect(&file).unwrap();
        assert_eq!(cases.violations.len(), 1, "{what}: {:?}", cases.violations);
        let v = &cases.violations[0];
        assert_eq!(v.rule, "zoo-case.format", "{what}");
        assert!(
            v.message.starts_with("not valid YAML"),
            "{what}: {}",
            v.message
        );
        if what != "alias bomb" {
            assert!(
                v.message.starts_with("not valid YAML (line ") && v.message.contains(", column "),
                "{what}: {}",
                v.message
            );
        } else {
            assert!(v.message.contains("repetition limit"), "{}", v.message);
        }
        if let Some(line) = line {
            assert_eq!(v.line, line, "{what}: {}", v.message);
            assert!(
                v.message
                    .contains("params: duplicate entry with key \"lr\""),
                "{}",
                v.message
            );
        }
        let err = ZooCases::load(&file).unwrap_err().to_string();
        assert!(err.contains("not valid YAML"), "{err}");
        assert!(
            !err.contains("RawFile") && !err.contains("models:"),
            "{err}"
        );
        assert_eq!(
            zoo_cases::yaml_error(text).as_deref(),
            Some(v.message.as_str())
        );
    }
    assert_eq!(zoo_cases::yaml_error(GOOD), None);
    // A mapping with a YAML error stays this repository's: its loader reports it.
    assert_eq!(
        detect("models:\n  a: 1\n  a: 2\n"),
        Ok(IndexFormat::ModelYaml)
    );
}

/// Issue #38 E14: a `run_dir` that is a symbolic link out of the zoo root was taken as a model
/// directory of the zoo: validate said clean and ci ran the case there. It is resolved and
/// refused, naming where it leads; a `run_file` linking out of run_dir likewise.
#[test]
fn a_run_dir_or_run_file_linking_out_of_the_zoo_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let zoo_root = tmp.path().join("zoo");
    let file = zoo(&zoo_root, GOOD);
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("run_scripts")).unwrap();
    std::fs::write(elsewhere.join("run_scripts/run_demo.py"), "print('x')\n").unwrap();
    let demo = zoo_root.join("PyTorch/contrib/Classification/Demo");
    std::fs::remove_dir_all(&demo).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &demo).unwrap();
    let cases = ZooCases::inspect(&file).unwrap();
    assert_eq!(rules(&cases.violations), vec![(4, "zoo-case.run-dir")]);
    let msg = &cases.violations[0].message;
    assert!(
        msg.contains(&elsewhere.canonicalize().unwrap().display().to_string())
            && msg.contains("outside the zoo root"),
        "{msg}"
    );
    assert!(cases.cases.is_empty());
    assert!(ZooCases::load(&file).is_err());

    // A link that stays inside the zoo is fine.
    let inside = zoo_root.join("PyTorch/contrib/Classification/Real");
    std::fs::rename(&elsewhere, &inside).unwrap();
    std::fs::remove_file(&demo).unwrap();
    std::os::unix::fs::symlink(&inside, &demo).unwrap();
    assert!(ZooCases::load(&file).is_ok());

    // The run script linking out of the model directory.
    let script = inside.join("run_scripts/run_demo.py");
    let outside_script = tmp.path().join("run_demo.py");
    std::fs::rename(&script, &outside_script).unwrap();
    std::os::unix::fs::symlink(&outside_script, &script).unwrap();
    let cases = ZooCases::inspect(&file).unwrap();
    assert_eq!(rules(&cases.violations), vec![(5, "zoo-case.run-file")]);
}

/// A TecoInference case file in the real shape (`run_dir` at the case's top level, four
/// stages), of our own model.
const INFERENCE: &str = include_str!("data/teco_inference/model.yaml");

/// A zoo root holding only `TecoInference/`, with the fixture's model directory and scripts;
/// returns the case file's path.
fn inference_zoo(root: &Path, text: &str) -> PathBuf {
    let model = root.join("TecoInference/contrib/detection/tinydet");
    std::fs::create_dir_all(model.join("images")).unwrap();
    for f in [
        "export_onnx.py",
        "example_valid.py",
        "example_single_batch.py",
        "example_multi_batch.py",
    ] {
        std::fs::write(model.join(f), "print('hi')\n").unwrap();
    }
    let file = root.join(zoo_cases::INFERENCE_FILE_IN_ZOO);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    file
}

/// Issue #41: the public ModelZoo's TecoInference case file (`run_dir` beside the stages, no
/// `desc`) was refused as an unknown field `run_dir`. It is read in its own schema: each stage
/// is the command the check runs in run_dir, in order, each flag at its line.
#[test]
fn a_teco_inference_case_file_is_read_with_its_stages() {
    let tmp = tempfile::tempdir().unwrap();
    let file = inference_zoo(tmp.path(), INFERENCE);
    assert_eq!(detect(INFERENCE), Ok(IndexFormat::ZooCases));
    let cases = ZooCases::load(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        cases.root.as_deref(),
        Some(tmp.path().canonicalize().unwrap().as_path()),
        "a root holding only TecoInference/ is a zoo root"
    );
    let case = &cases.cases[0];
    assert_eq!(case.kind, CaseKind::Inference);
    assert_eq!(case.run_dir, "TecoInference/contrib/detection/tinydet");
    let stages: Vec<_> = case.invocations.iter().map(|i| i.stage).collect();
    assert_eq!(
        stages,
        zoo_cases::INFERENCE_STAGES
            .iter()
            .map(|s| Some(*s))
            .collect::<Vec<_>>()
    );
    let run: Vec<String> = case
        .invocations
        .iter()
        .map(|i| i.args().join(" "))
        .collect();
    assert_eq!(
        run[0],
        "export_onnx.py --ckpt /data/weights/tinydet_voc.pth"
    );
    assert_eq!(
        run[1],
        "example_valid.py --ckpt tinydet_dyn_float16.onnx --batch_size 4 --data_path \
         /data/datasets/voc/VOC2007 --target sdaa --dtype float16 --input_size 320 --verbose False"
    );
    assert_eq!(
        run[3],
        "example_multi_batch.py --ckpt tinydet_dyn_float16.onnx --batch_size 1 --data_path \
         ./images --target sdaa --dtype float16"
    );
    // Each flag at the line of its key (the fixture's line numbers).
    let line_of = |stage: usize, name: &str| {
        case.invocations[stage]
            .flags
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.line)
    };
    assert_eq!(line_of(0, "ckpt"), Some(8));
    assert_eq!(line_of(1, "dtype"), Some(16));
    assert_eq!(line_of(1, "verbose"), Some(19));
    assert_eq!(line_of(2, "conf_thres"), Some(29));
    assert_eq!(case.invocations[2].line, 21);
    // A training case's single invocation is its args with the file's device.
    let train = tempfile::tempdir().unwrap();
    let train_cases = ZooCases::load(&zoo(train.path(), GOOD)).unwrap();
    let t = &train_cases.cases[0];
    assert_eq!(t.kind, CaseKind::Training);
    assert_eq!(t.invocations.len(), 1);
    assert_eq!(t.invocations[0].args(), t.args("sdaa"));
    assert_eq!(t.invocations[0].flags[0].line, 7, "nnodes");
}

/// The inference schema's rules, each at the line of what breaks it, all reported together.
#[test]
fn inference_rules_fire_at_their_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "\
- case_name: alice
  run_dir: PyTorch/contrib/detection/tinydet
  run_export:
- case_name: bob
  run_dir: TecoInference/contrib/detection/tinydet
  run_example_valid:
    run_file: missing_valid.py
    params:
      ckpt: a.onnx
      batch_size: 0
      data_path: /d
      target: sdaa
      dtype: bfloat16
      topk: 1
  run_example_single:
    run_file: example_single_batch.py
    params:
      ckpt: a.onnx
      batch_size: 1
      data_path: ./images/cat.jpg
      target: sdaa
      others: {dtype: float32}
- case_name: carol
  run_dir: TecoInference/contrib/detection/tinydet
- case_name: dave
  run_dir: TecoInference/contrib/detection/tinydet
  desc: {run_file: x.py}
";
    let file = inference_zoo(tmp.path(), text);
    let cases = ZooCases::inspect(&file).unwrap();
    assert!(cases.cases.is_empty(), "{:?}", cases.cases);
    assert_eq!(
        rules(&cases.violations),
        vec![
            (2, "zoo-case.run-dir"),
            (3, "zoo-case.required"),
            (7, "zoo-case.run-file"),
            (10, "zoo-case.params"),
            (13, "zoo-case.params"),
            (14, "zoo-case.format"),
            (17, "zoo-case.required"), // dtype missing: the params line
            (22, "zoo-case.others"),
            (23, "zoo-case.required"),
            (26, "zoo-case.format"),
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
        msg(2).contains("must start with TecoInference/"),
        "{}",
        msg(2)
    );
    assert!(msg(3).contains("`run_export` is empty"), "{}", msg(3));
    assert!(
        msg(7).contains("`run_file: missing_valid.py` does not exist"),
        "{}",
        msg(7)
    );
    assert!(
        msg(10).contains("`batch_size: 0` must be a positive integer"),
        "{}",
        msg(10)
    );
    assert!(msg(13).contains("`dtype: bfloat16`") && msg(13).contains("float16, float32"));
    assert!(msg(14).contains("unknown field `topk`") && msg(14).contains("params.others"));
    assert!(
        msg(17).contains("`run_example_single.params.dtype` is missing"),
        "{}",
        msg(17)
    );
    assert!(msg(23).contains("at least one stage"), "{}", msg(23));
    assert!(
        msg(26).contains("unknown field `run_dir`") && msg(26).contains("TecoInference case"),
        "{}",
        msg(26)
    );
}
