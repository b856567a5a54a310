//! `model_config` loads the two kinds of YAML a model carries: its entry in `model.yaml`
//! (what the PR functional check runs) and its FleetX-style training config (`-c file.yaml`
//! plus `-o Section.key=value` overrides). All of it goes through [`yaml::from_str`], which
//! caps the nesting depth before serde_yaml parses. The public ModelZoo's own PR-check file
//! (a list of cases, [`zoo_cases`]) is read too; [`zoo_cases::detect`] tells the two model.yaml
//! schemas apart by their shape. Files are opened through [`files`], which never blocks on a
//! FIFO.

pub mod files;
pub mod fleetx;
pub mod model_yaml;
pub mod yaml;
pub mod zoo_cases;

pub use model_yaml::{Framework, ModelEntry, ModelYaml, ModelYamlError};
pub use zoo_cases::{IndexFormat, ZooCase, ZooCases, ZooCasesError};
