//! `model_config` loads the two kinds of YAML a model carries: its entry in `model.yaml`
//! (what the PR functional check runs) and its FleetX-style training config (`-c file.yaml`
//! plus `-o Section.key=value` overrides). All of it goes through [`yaml::from_str`], which
//! caps the nesting depth before serde_yaml parses.

pub mod fleetx;
pub mod model_yaml;
pub mod yaml;

pub use model_yaml::{Framework, ModelEntry, ModelYaml, ModelYamlError};
