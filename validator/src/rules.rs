//! Every rule `validate` reports, with its severity: the layout rules of a model directory,
//! the review's cross-file and zoo-wide ones, and the lookup a finding takes its severity
//! from. One table below both checkers, so neither has to import the other to name a rule.

use serde::Serialize;

/// How bad a finding is. `error`: the model cannot run as submitted, or a claim it makes is
/// false; `warning`: likely wrong, a reviewer would send it back; `info`: worth knowing, not a
/// violation. Errors and warnings are violations (exit 1); info findings alone exit 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    /// The word used in every output: `error`, `warning`, `info`.
    pub fn word(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }

    /// Whether a finding of this severity is a violation (fails the check).
    pub fn is_violation(self) -> bool {
        self != Severity::Info
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// One rule: a stable id (used in output and `--list-rules`), its severity and what it asks
/// for.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    pub description: &'static str,
}

/// The most of one file the rules read (the layout rules and the review alike): validate's memory
/// stays bounded whatever a file's size (a 2 GB README used to be held twice).
pub(crate) const MAX_CHECKED_BYTES: u64 = 4 << 20;

/// Every rule `validate` checks, in the order they are checked.
pub const LAYOUT_RULES: &[Rule] = &[
    Rule {
        id: "layout.readme",
        severity: Severity::Error,
        description: "the model directory has a README.md",
    },
    Rule {
        id: "layout.requirements",
        severity: Severity::Error,
        description: "a Python model directory has requirements.txt",
    },
    Rule {
        id: "layout.run-scripts",
        severity: Severity::Error,
        description: "a Python model directory has run_scripts/ holding run_<model>.py, argument.py, formate_cmd.py and README.md",
    },
    Rule {
        id: "crate.run-binary",
        severity: Severity::Error,
        description: "a Rust model crate declares a run_<model> binary in Cargo.toml and its source file exists",
    },
    Rule {
        id: "crate.spec",
        severity: Severity::Error,
        description: "a Rust model crate has spec.yaml, a valid argument spec that merges with the ModelZoo standard spec",
    },
    Rule {
        id: "readme.encoding",
        severity: Severity::Warning,
        description: "README files are UTF-8 text",
    },
    Rule {
        id: "readme.sections",
        severity: Severity::Warning,
        description: "the model README has the sections model introduction, dataset preparation, environment (Docker) preparation, start training, training results (English or Chinese headings)",
    },
    Rule {
        id: "readme.results-table",
        severity: Severity::Warning,
        description: "the model README's training results section holds a table of results (the runs' arguments and the accuracy reached)",
    },
    Rule {
        id: "readme.placeholders",
        severity: Severity::Warning,
        description: "README files hold no placeholders: TODO, FIXME, TBD, 待补充, 待填写, an unrendered {{variable}} or the README template's `<MODEL name>` slot (`<MODLE MaskFormer>`) outside code and HTML comments (a fresh `modelzoo new` scaffold is not finished)",
    },
    Rule {
        id: "args.documented",
        severity: Severity::Warning,
        description: "the run_scripts README (a crate's README) has an entry (a table row's first cell, or a --name) for model_name, batch_size, epoch, step, dataset_path, lr, device, autocast, plus nproc_per_node for DDP models and nnode, node_rank for multi-node models",
    },
    Rule {
        id: "args.step",
        severity: Severity::Error,
        description: "the argument parser accepts --step (argument.py, or the crate's merged argument spec)",
    },
    Rule {
        id: "requirements.no-framework",
        severity: Severity::Error,
        description: "requirements.txt does not list torch or paddle (the SDAA environment provides them)",
    },
    Rule {
        id: "model-yaml.entry",
        severity: Severity::Error,
        description: "model.yaml (given with --model-yaml, or found as model_config/model.yaml in an ancestor directory) has an entry for the model",
    },
    Rule {
        id: "fs.readable",
        severity: Severity::Error,
        description: "every file and directory the rules look at can be read (I/O errors, symlink loops and files that are not regular files, e.g. a FIFO, are reported here; those are never opened)",
    },
    Rule {
        id: "fs.size",
        severity: Severity::Warning,
        description: "a README, requirements.txt, spec or script the rules read is at most 4 MiB (larger is not a source file: only its first 4 MiB are checked, so memory stays bounded)",
    },
];

/// The review rules, in the order they are checked.
pub const REVIEW_RULES: &[Rule] = &[
    Rule {
        id: "args.case-params",
        severity: Severity::Error,
        description: "every param of a ModelZoo case (training or TecoInference stage), passed as --<name> <value>, is an option the run file's argparse parser accepts (exactly, or as argparse's unique prefix); the parser is read statically from the run file and the local modules it imports (argument.py), and nothing is said when it cannot be (computed option names, parse_known_args, another argument library)",
    },
    Rule {
        id: "imports.local",
        severity: Severity::Error,
        description: "every module a Python file imports resolves: relative imports to a file or package in the directory, other names to one in the directory, the standard library, a requirements file, a pip/mim install the README or a script runs, or a package the SDAA environment or the ModelZoo's usual stacks provide",
    },
    Rule {
        id: "paths.command",
        severity: Severity::Error,
        description: "every file a command of test.sh (any shell script) or the README runs or reads — the Python script, its --config, `pip install -r FILE`, loss.py's --cuda-log, `bash x.sh` — exists where the command runs (after its `cd`); files the same script wrote first and paths outside the directory are not checked",
    },
    Rule {
        id: "paths.cd",
        severity: Severity::Error,
        description: "a README's `cd <ModelZoo_path>/...` names this model's own directory (exact case), not another model's",
    },
    Rule {
        id: "paths.link",
        severity: Severity::Warning,
        description: "every relative link and image of the model README (Markdown or <img src>) that stays inside the directory points to a file that exists",
    },
    Rule {
        id: "commands.consistent",
        severity: Severity::Warning,
        description: "test.sh trains with the script and config the README's training command names (not another model's)",
    },
    Rule {
        id: "cards.claim",
        severity: Severity::Warning,
        description: "a README sentence claiming one card (单卡, 单机单卡, single card) is not followed by a command that starts several processes (--nproc_per_node N > 1), and test.sh starts as many processes as the README's command",
    },
    Rule {
        id: "logs.device",
        severity: Severity::Error,
        description: "a log named for a device holds a run on it: a cuda/gpu log has no Torch-SDAA banner and no `--device sdaa`; an sdaa log shows no `--device cuda|cpu` or `Device: cpu`",
    },
    Rule {
        id: "logs.identical",
        severity: Severity::Error,
        description: "the CUDA log and the SDAA log of a pair are not byte-identical and do not hold the same loss values (a copied baseline proves nothing)",
    },
    Rule {
        id: "results.figures",
        severity: Severity::Error,
        description: "the MeanRelativeError / MeanAbsoluteError a README or a combined loss file (=== CUDA === / === SDAA === / === RESULT ===) quotes are what the ModelZoo's loss.py rule gives on the logs the directory ships (to the digits quoted)",
    },
    Rule {
        id: "results.verdict",
        severity: Severity::Error,
        description: "the results a README or a combined loss file report do not carry the verdict `fail`",
    },
    Rule {
        id: "results.signed-pass",
        severity: Severity::Warning,
        description: "a `pass` whose mean relative error is beyond ±5%: it passes only because loss.py's means are signed (a negative mean passes) — the SDAA curve is far from CUDA's",
    },
    Rule {
        id: "results.unverifiable",
        severity: Severity::Info,
        description: "a README quotes loss.py figures but the directory ships no CUDA/SDAA log pair (nor combined loss file) to recompute them from",
    },
    Rule {
        id: "results.constant",
        severity: Severity::Error,
        description: "a comparison script (loss.py and the like) computes its MeanRelativeError / MeanAbsoluteError: it does not print or assign them as constants",
    },
    Rule {
        id: "requirements.tree",
        severity: Severity::Error,
        description: "no requirements file anywhere in the directory (run_scripts/ included) pins torch, torch_sdaa or paddle, or installs a local wheel or path (`file://`, `pkg @ file:...`, `./x.whl`); the root file's torch/paddle are requirements.no-framework's",
    },
    Rule {
        id: "zoo.near-duplicate",
        severity: Severity::Warning,
        description: "(--all) no two model directories have names that differ only in case or punctuation (MobileNet_V2 / Mobilenet_v2)",
    },
    Rule {
        id: "zoo.misspelt-name",
        severity: Severity::Warning,
        description: "standard names are spelt exactly: README.md, requirements.txt, run_scripts/ and run_scripts' README.md, argument.py, formate_cmd.py, test.sh (not `run_script`, `README.MD`, `readme`, `requirement.txt`), and no file or directory name starts or ends with a space",
    },
    Rule {
        id: "zoo.junk",
        severity: Severity::Warning,
        description: "no committed junk: tensorboard event files, executables (.exe/.dll), wget-log, nohup.out, Python caches, notebook checkpoints, OS files, training outputs (work_dirs/, checkpoints/, runs/, numbered run directories such as train2/) and checkpoint files (.pth, .pt, .ckpt), dataset files (.arrow, archives), scratch files (新建文本文档.txt)",
    },
    Rule {
        id: "zoo.oversized",
        severity: Severity::Error,
        description: "no file is over 100 MiB (GitHub refuses the push; datasets and weights belong on a download link)",
    },
    Rule {
        id: "zoo.shebang",
        severity: Severity::Warning,
        description: "a script's `#!` shebang is its first line, not below a (pasted, often cut-off) license header",
    },
    Rule {
        id: "docker.file",
        severity: Severity::Warning,
        description: "a Dockerfile's COPY/ADD sources exist beside it or in the model directory, and its last instruction is not a second FROM (the image would be the bare base)",
    },
    Rule {
        id: "zoo.category",
        severity: Severity::Warning,
        description: "a model directory under PyTorch/{contrib,build-in}/<Category>/ (Classification, Detection, Segmentation, NLP) is of that category's task: its name, its README's title or its run scripts' imports do not name another task's model family (BERT/GPT/LLaMA, transformers' language-model heads; YOLO/RetinaNet, mmdet; UNet/DeepLab/SegFormer, mmseg)",
    },
    Rule {
        id: "zoo.adaptation-marker",
        severity: Severity::Warning,
        description: "a source file under a third-party copyright notice that was changed for SDAA (it uses torch_sdaa, sdaa or tcap_dllogger) carries the PR rules' marker `Adapted to tecorigin hardware`",
    },
];

/// Every rule `validate` reports: [`LAYOUT_RULES`] (model directories), the ModelZoo case file's
/// (`zoo-case.*`, defined with its parser in `model_config::zoo_cases`; all errors), then the
/// review's cross-file and zoo-wide rules ([`REVIEW_RULES`]).
pub fn all_rules() -> impl Iterator<Item = Rule> {
    LAYOUT_RULES
        .iter()
        .copied()
        .chain(
            model_config::zoo_cases::RULES
                .iter()
                .map(|&(id, description)| Rule {
                    id,
                    severity: Severity::Error,
                    description,
                }),
        )
        .chain(REVIEW_RULES.iter().copied())
}

/// The severity of a rule id (an id no rule has is an error).
pub fn severity_of(rule: &str) -> Severity {
    all_rules()
        .find(|r| r.id == rule)
        .map(|r| r.severity)
        .unwrap_or(Severity::Error)
}
