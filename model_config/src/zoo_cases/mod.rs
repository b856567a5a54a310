//! The public Tecorigin ModelZoo's own PR-check file, `<zoo>/PyTorch/contrib/model_config/model.yaml`:
//! a list of cases, each run by the ModelZoo's functional check as
//! `cd <run_dir> && python <run_file> --nnodes … --device sdaa --<other> <value>`.
//!
//! ```yaml
//! - case_name: octocat                      # the contributor's account name
//!   desc:
//!     run_dir: PyTorch/contrib/Classification/Demo   # from the zoo root; PyTorch/ or PaddlePaddle/
//!     run_file: run_scripts/run_demo.py              # under run_dir; run_scripts/
//!   params:                                 # all ten required, none empty
//!     nnodes: 1
//!     nproc_per_node: 4
//!     batch_size: 32
//!     model_name: resnet50
//!     dataset_path: /data/datasets/imagenet
//!     step: 100
//!     epoch: 1
//!     lr: 0.1
//!     device: sdaa
//!     autocast: True
//!     others: {warmup: 5}                   # the model's own flags, passed as --warmup 5
//! ```
//!
//! This repository's own model.yaml (a mapping with `models:`, [`crate::model_yaml`]) is a
//! different schema; `detect` tells the two apart by their shape. [`ZooCases::inspect`]
//! checks every rule and collects what is wrong (each with its line, the rule id and what to
//! do), so `modelzoo validate` reports all of it at once; [`ZooCases::load`] refuses a file
//! with any violation, for `modelzoo ci`.
//!
//! The module is split by concern: `schema` (the keys, rules and the types a case is read
//! into), `detect` (which model.yaml schema a text is in), `raw` (serde's view of a case),
//! `locate` (the line of a key), `check` (the rules on one training case), `inference`
//! (the TecoInference schema and its rules) and `cases` (the file: inspect, load, the zoo
//! root).

mod cases;
mod check;
mod detect;
mod inference;
mod locate;
mod raw;
mod schema;

pub use cases::{case_file_of, case_files_of, zoo_root, ZooCases, ZooCasesError};
pub use detect::{detect, yaml_error, IndexFormat};
pub use schema::{
    CaseKind, Flag, Invocation, Scalar, ScalarKind, Violation, ZooCase, CASE_KEYS, DESC_KEYS,
    FILE_IN_ZOO, INFERENCE_DTYPES, INFERENCE_FILE_IN_ZOO, INFERENCE_PARAMS,
    INFERENCE_RUN_DIR_PREFIXES, INFERENCE_STAGES, REQUIRED_PARAMS, RULES, RUN_DIR_PREFIXES,
    RUN_FILE_PREFIX, ZOO_ROOT_DIRS,
};
