//! `model_config` loads the two kinds of YAML a model carries: its entry in `model.yaml`
//! (what the PR functional check runs) and its FleetX-style training config (`-c file.yaml`
//! plus `-o Section.key=value` overrides).

pub mod fleetx;
pub mod model_yaml;

pub use model_yaml::{Framework, ModelEntry, ModelYaml, ModelYamlError};
