//! Fuzzing the YAML a user feeds (issue #28): model.yaml (both schemas: the ModelZoo's case files
//! in block and flow style, issue #38) and FleetX configs with
//! `-o` overrides, from the seeds in tests/fuzz_corpus/ mutated — every case returns Ok or a
//! clear Err, never a panic or a hang.

use std::path::Path;
use std::time::Duration;

use model_config::fleetx::{ConfigTree, EngineConfig};
use model_config::{zoo_cases, ModelYaml, ZooCases};
use modelzoo_testkit::fuzz::{corpus, mutated, within, CASES};
use proptest::prelude::*;

fn seeds() -> Vec<Vec<u8>> {
    corpus(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus"))
}

fn index(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let path = Path::new("/nonexistent/model_config/model.yaml");
    let _ = zoo_cases::detect(&text);
    let _ = ModelYaml::parse(&text, path);
    let cases = ZooCases::inspect_text(&text, path);
    for case in &cases.cases {
        let _ = case.args("sdaa");
        let _ = cases.run_dir(case);
        for inv in &case.invocations {
            let _ = inv.args();
        }
    }
    let _ = cases.into_valid();
}

fn fleetx(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if let Ok(mut tree) = ConfigTree::from_str(&text, Path::new("fuzz.yaml")) {
        // The text also reads as an override, as `-o` does.
        let _ = tree.apply_override(&text);
        let _ = tree.section::<EngineConfig>("Engine");
        let _ = tree.check_sections(&["Engine", "Data", "Model", "Optimizer"]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn model_yaml_of_either_schema_never_panics(input in mutated(seeds())) {
        within(Duration::from_secs(10), input, index);
    }

    #[test]
    fn fleetx_configs_and_overrides_never_panic(input in mutated(seeds())) {
        within(Duration::from_secs(10), input, fleetx);
    }
}
