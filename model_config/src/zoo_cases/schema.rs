//! The training case file's schema: where it lives, its keys, its rules, and the types a
//! well-formed case is read into.

use std::fmt;

/// Where the file lives in a ModelZoo checkout, relative to the zoo root.
pub const FILE_IN_ZOO: &str = "PyTorch/contrib/model_config/model.yaml";

/// The keys of a case.
pub const CASE_KEYS: &[&str] = &["case_name", "desc", "params"];

/// The keys of `desc`.
pub const DESC_KEYS: &[&str] = &["run_dir", "run_file"];

/// The parameters every case must give, none empty, in the order they are passed.
pub const REQUIRED_PARAMS: &[&str] = &[
    "nnodes",
    "nproc_per_node",
    "batch_size",
    "model_name",
    "dataset_path",
    "step",
    "epoch",
    "lr",
    "device",
    "autocast",
];

/// How `desc.run_dir` may begin: the framework directories of the zoo root.
pub const RUN_DIR_PREFIXES: &[&str] = &["PyTorch/", "PaddlePaddle/"];

/// Where the TecoInference case file lives, relative to the zoo root.
pub const INFERENCE_FILE_IN_ZOO: &str = "TecoInference/contrib/model_config/model.yaml";

/// How an inference case's `run_dir` (at the case's top level) must begin.
pub const INFERENCE_RUN_DIR_PREFIXES: &[&str] = &["TecoInference/"];

/// The stages of an inference case, in the order the check runs them: the ONNX export, then
/// inference over a data set, one sample and several samples.
pub const INFERENCE_STAGES: &[&str] = &[
    "run_export",
    "run_example_valid",
    "run_example_single",
    "run_example_multi",
];

/// The parameters every inference example stage (`run_example_*`) must give, none empty, in
/// the order they are passed; the model's own go under `others`.
pub const INFERENCE_PARAMS: &[&str] = &["ckpt", "batch_size", "data_path", "target", "dtype"];

/// The precisions an inference stage's `dtype` may name (the TecoInference case-file guide).
pub const INFERENCE_DTYPES: &[&str] = &["float16", "float32"];

/// The directories of a zoo root, one of which marks it.
pub const ZOO_ROOT_DIRS: &[&str] = &["PyTorch", "PaddlePaddle", "TecoInference"];

/// How `desc.run_file` must begin.
pub const RUN_FILE_PREFIX: &str = "run_scripts/";

/// Every rule a case file is checked against: `(id, what it asks for)`. The ids are the
/// finding ids `modelzoo validate` reports.
pub const RULES: &[(&str, &str)] = &[
    (
        "zoo-case.format",
        "a ModelZoo case file is valid YAML (a syntax error, duplicate key, alias expansion or integer out of range is named with its line and column) and a list of cases, each a mapping of case_name, desc (run_dir, run_file) and params (the ten parameters and others) — or, for a TecoInference case, of case_name, run_dir and the stages run_export, run_example_valid, run_example_single, run_example_multi (each run_file and params); unknown keys and wrong types are named with the keys valid there",
    ),
    (
        "zoo-case.required",
        "every case gives case_name, desc.run_dir, desc.run_file and params nnodes, nproc_per_node, batch_size, model_name, dataset_path, step, epoch, lr, device, autocast, none of them empty; a TecoInference case gives case_name, run_dir and at least one stage, each stage its run_file, each run_example_* stage params ckpt, batch_size, data_path, target, dtype, none of them empty",
    ),
    (
        "zoo-case.case-name",
        "case_name is unique in the file and a plain name (letters, digits, `.`, `_`, `-`)",
    ),
    (
        "zoo-case.run-dir",
        "desc.run_dir starts with PyTorch/ or PaddlePaddle/ (a TecoInference case's run_dir with TecoInference/), stays inside the zoo root (symbolic links resolved) and is a directory there",
    ),
    (
        "zoo-case.run-file",
        "desc.run_file starts with run_scripts/ (a TecoInference stage's run_file anywhere in run_dir), stays inside run_dir (symbolic links resolved) and is a file there",
    ),
    (
        "zoo-case.params",
        "nnodes and nproc_per_node are positive integers, autocast is True or False, device is cpu, cuda or sdaa; a TecoInference stage's batch_size is a positive integer and dtype float16 or float32, and its params are single values",
    ),
    (
        "zoo-case.others",
        "params.others (a TecoInference stage's too) is a mapping of flag names to single, non-empty values, none of them one of the parameters set beside it",
    ),
    (
        "zoo-case.root",
        "the zoo root (the directory holding PyTorch/, PaddlePaddle/ or TecoInference/) is found above the case file, so run_dir can be resolved",
    ),
];

/// A parameter value as the ModelZoo's check passes it on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Scalar {
    /// The argument text: YAML booleans as Python prints them (`True`, `False`), numbers as
    /// written, strings verbatim.
    pub text: String,
    pub kind: ScalarKind,
}

/// What a [`Scalar`] was in the YAML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    String,
    Integer,
    Float,
    Bool,
}

/// Which of the ModelZoo's two case schemas a case is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseKind {
    /// A training case (`PyTorch/contrib/model_config/model.yaml`): `desc.run_dir`,
    /// `desc.run_file` and the ten `params`; one run of `python <run_file> --nnodes …`.
    Training,
    /// A TecoInference case (`TecoInference/contrib/model_config/model.yaml`): `run_dir` at the
    /// case's top level and up to four stages ([`INFERENCE_STAGES`]), each `python <run_file>
    /// --<param> <value> …` in `run_dir`, in that order (the ONNX export first).
    Inference,
}

/// One `--name value` the check passes, with the line it is set on.
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    pub name: String,
    pub value: Scalar,
    /// 1-based line of the key in the case file.
    pub line: usize,
}

/// One `python <run_file> --<flag> <value> …` the ModelZoo's check runs for a case, in
/// `run_dir`: what a check of the flags against the script's own parser reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// The inference stage (`run_export`, `run_example_valid`, …); `None` for a training case.
    pub stage: Option<&'static str>,
    /// The script, relative to `run_dir`.
    pub run_file: String,
    /// 1-based line of its `run_file` key.
    pub line: usize,
    /// In the order they are passed (a training case's `device` as in the file).
    pub flags: Vec<Flag>,
}

impl Invocation {
    /// The arguments after the interpreter: `<run_file> --<flag> <value> …`.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![self.run_file.clone()];
        for f in &self.flags {
            args.push(format!("--{}", f.name));
            args.push(f.value.text.clone());
        }
        args
    }
}

/// One well-formed case.
#[derive(Debug, Clone, PartialEq)]
pub struct ZooCase {
    pub case_name: String,
    /// The line its list item begins on (1-based).
    pub line: usize,
    /// The model directory, relative to the zoo root.
    pub run_dir: String,
    /// The script, relative to `run_dir` (an inference case's: its first stage's).
    pub run_file: String,
    /// The ten standard parameters, in [`REQUIRED_PARAMS`] order (empty for an inference case).
    pub params: Vec<(String, Scalar)>,
    /// `params.others`, in file order (empty for an inference case).
    pub others: Vec<(String, Scalar)>,
    pub kind: CaseKind,
    /// What the check runs, in order: one run for a training case, one per stage for an
    /// inference case.
    pub invocations: Vec<Invocation>,
}

impl ZooCase {
    /// The standard parameter `name`.
    pub fn param(&self, name: &str) -> Option<&Scalar> {
        self.params.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// The arguments after the interpreter, as the ModelZoo's check builds them:
    /// `<run_file> --nnodes N … --device <device> --autocast … --<other> <value>`. `device`
    /// replaces the case's own (the check runs every case on the device it tests).
    pub fn args(&self, device: &str) -> Vec<String> {
        let mut args = vec![self.run_file.clone()];
        for (name, value) in &self.params {
            args.push(format!("--{name}"));
            args.push(if name == "device" {
                device.to_string()
            } else {
                value.text.clone()
            });
        }
        for (name, value) in &self.others {
            args.push(format!("--{name}"));
            args.push(value.text.clone());
        }
        args
    }
}

/// One broken rule: where, which rule, and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// 1-based line in the file.
    pub line: usize,
    /// The rule id ([`RULES`]).
    pub rule: &'static str,
    /// The case it is about, when known.
    pub case: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.case {
            Some(case) => write!(f, "{}: case `{case}`: {}", self.rule, self.message),
            None => write!(f, "{}: {}", self.rule, self.message),
        }
    }
}
