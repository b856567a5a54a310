//! The TecoInference case file, `<zoo>/TecoInference/contrib/model_config/model.yaml`: the
//! same list of `case_name`s as the training one, but `run_dir` at the case's top level (no
//! `desc`) and up to four stages, each run in `run_dir` as `python <run_file> --<param> <value>
//! …` in this order:
//!
//! ```yaml
//! - case_name: octocat
//!   run_dir: TecoInference/contrib/detection/ssd   # from the zoo root; TecoInference/
//!   run_export:                                    # the ONNX export, first
//!     run_file: export_onnx.py                     # in run_dir
//!     params: {ckpt: /data/ssd.pth}                # optional; any flags
//!   run_example_valid:                             # inference over a data set
//!     run_file: example_valid.py
//!     params:                                      # all five required, none empty
//!       ckpt: ssd_dyn_float16.onnx                 # what the export wrote
//!       batch_size: 4
//!       data_path: /data/voc/VOC2007
//!       target: sdaa
//!       dtype: float16                             # float16 or float32
//!       others: {input_size: 320}                  # the script's own flags
//!   run_example_single: {...}                      # one sample (data_path from run_dir)
//!   run_example_multi: {...}                       # a directory of samples
//! ```
//!
//! Before this schema was recognised, such a case was refused as an unknown field `run_dir`
//! (issue #41: a false positive on the public ModelZoo's own file).

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde_yaml::Value;

use super::check::CaseCheck;
use super::raw::Field;
use super::schema::{
    CaseKind, Flag, Invocation, ScalarKind, ZooCase, INFERENCE_DTYPES, INFERENCE_PARAMS,
    INFERENCE_RUN_DIR_PREFIXES, INFERENCE_STAGES,
};

/// Whether a case is in the TecoInference schema: `run_dir` or a stage at its top level, and
/// neither `desc` nor `params` (a case mixing both is read as a training case, whose
/// message names the unknown key).
pub(super) fn is_inference(item: &Value) -> bool {
    let Some(m) = item.as_mapping() else {
        return false;
    };
    let has = |k: &str| m.contains_key(k);
    !has("desc") && !has("params") && (has("run_dir") || INFERENCE_STAGES.iter().any(|s| has(s)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInferenceCase {
    #[serde(default)]
    case_name: Field,
    #[serde(default)]
    run_dir: Field,
    #[serde(default)]
    run_export: Field,
    #[serde(default)]
    run_example_valid: Field,
    #[serde(default)]
    run_example_single: Field,
    #[serde(default)]
    run_example_multi: Field,
}

impl RawInferenceCase {
    fn stage(&self, name: &str) -> &Field {
        match name {
            "run_export" => &self.run_export,
            "run_example_valid" => &self.run_example_valid,
            "run_example_single" => &self.run_example_single,
            _ => &self.run_example_multi,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStage {
    #[serde(default)]
    run_file: Field,
    #[serde(default)]
    params: Field,
}

impl CaseCheck<'_> {
    /// The rules of an inference case; the case when it is complete enough to name.
    pub(super) fn inference_case(
        &mut self,
        item: &Value,
        root: Option<&Path>,
        seen: &mut HashMap<String, usize>,
    ) -> Option<ZooCase> {
        self.note_name(item);
        let raw: RawInferenceCase = self.deserialize(item, &[])?;
        let case_name = self.case_name(&raw.case_name, seen);
        let run_dir = self.required(&["run_dir"], &raw.run_dir);
        let run_dir_ok = run_dir.as_ref().is_some_and(|d| {
            self.check_run_dir(&["run_dir"], &d.text, root, INFERENCE_RUN_DIR_PREFIXES)
        });
        let dir = run_dir
            .as_ref()
            .filter(|_| run_dir_ok)
            .and_then(|d| root.map(|r| r.join(&d.text)));
        let mut invocations = Vec::new();
        let mut given = 0;
        for &stage in INFERENCE_STAGES {
            let Field::Given(value) = raw.stage(stage) else {
                continue;
            };
            given += 1;
            if let Some(inv) = self.stage(stage, value, dir.as_deref()) {
                invocations.push(inv);
            }
        }
        if given == 0 {
            self.fail(
                &[],
                "zoo-case.required",
                format!(
                    "an inference case runs at least one stage; give {} (each with run_file and params)",
                    INFERENCE_STAGES.join(", ")
                ),
            );
        }
        let run_file = invocations.first()?.run_file.clone();
        Some(ZooCase {
            case_name: case_name?.text,
            line: self.start + 1,
            run_dir: run_dir?.text,
            run_file,
            params: Vec::new(),
            others: Vec::new(),
            kind: CaseKind::Inference,
            invocations,
        })
    }

    /// One stage: its run_file (a file in run_dir, when that is usable) and its params.
    fn stage(
        &mut self,
        stage: &'static str,
        value: &Value,
        dir: Option<&Path>,
    ) -> Option<Invocation> {
        if value.is_null() {
            self.fail(
                &[stage],
                "zoo-case.required",
                format!("`{stage}` is empty; give its run_file and params"),
            );
            return None;
        }
        let raw: RawStage = self.deserialize(value, &[stage])?;
        let run_file = self.required(&[stage, "run_file"], &raw.run_file);
        if let Some(f) = &run_file {
            self.check_run_file(&[stage, "run_file"], &f.text, None, dir);
        }
        let flags = if stage == "run_export" {
            self.export_params(&raw.params)
        } else {
            self.example_params(stage, &raw.params)
        };
        Some(Invocation {
            stage: Some(stage),
            line: self.line(&[stage, "run_file"]),
            run_file: run_file?.text,
            flags: flags?,
        })
    }

    /// `params` as a mapping, or a violation; `Ok(None)` when absent or empty.
    fn params_map<'v>(
        &mut self,
        stage: &str,
        params: &'v Field,
    ) -> Result<Option<&'v serde_yaml::Mapping>, ()> {
        match params {
            Field::Missing | Field::Given(Value::Null) => Ok(None),
            Field::Given(Value::Mapping(m)) => Ok(Some(m)),
            Field::Given(_) => {
                self.fail(
                    &[stage, "params"],
                    "zoo-case.format",
                    format!("`{stage}.params` must be a mapping of parameter names to values"),
                );
                Err(())
            }
        }
    }

    /// The export's params: optional, any flags (the public file passes the weights as
    /// `ckpt`), and `others` like an example's.
    fn export_params(&mut self, params: &Field) -> Option<Vec<Flag>> {
        let stage = "run_export";
        let m = self.params_map(stage, params).ok()?;
        let mut flags = Vec::new();
        let Some(m) = m else { return Some(flags) };
        let names: Vec<String> = m
            .keys()
            .filter_map(|k| k.as_str().map(str::to_string))
            .filter(|k| k != "others")
            .collect();
        let reserved: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut ok = true;
        for (k, v) in m {
            let Some(name) = k.as_str() else {
                self.fail(
                    &[stage, "params"],
                    "zoo-case.format",
                    "a key of `run_export.params` is not a name; write `flag_name: value`".into(),
                );
                ok = false;
                continue;
            };
            if name == "others" {
                for (n, value) in self.others(&[stage, "params"], &reserved, v) {
                    flags.push(self.flag(&[stage, "params", "others", &n], &n, &value));
                }
                continue;
            }
            let field = Field::Given(v.clone());
            match self.required(&[stage, "params", name], &field) {
                Some(value) => flags.push(self.flag(&[stage, "params", name], name, &value)),
                None => ok = false,
            }
        }
        ok.then_some(flags)
    }

    /// An example stage's params: the five of [`INFERENCE_PARAMS`] (in that order), then
    /// `others` in file order; any other key is refused (the model's own flags go under
    /// `others`).
    fn example_params(&mut self, stage: &str, params: &Field) -> Option<Vec<Flag>> {
        let Ok(m) = self.params_map(stage, params) else {
            return None;
        };
        let Some(m) = m else {
            self.fail(
                &[stage],
                "zoo-case.required",
                format!(
                    "`{stage}.params` is missing or empty; give {}",
                    INFERENCE_PARAMS.join(", ")
                ),
            );
            return None;
        };
        let before = self.violations.len();
        for k in m.keys() {
            let name = k.as_str().unwrap_or("?");
            if name != "others" && !INFERENCE_PARAMS.contains(&name) {
                self.fail(
                    &[stage, "params", name],
                    "zoo-case.format",
                    format!(
                        "`{stage}.params`: unknown field `{name}`, expected one of {}, others; put the model's own flags under `{stage}.params.others`",
                        INFERENCE_PARAMS.join(", ")
                    ),
                );
            }
        }
        let mut flags = Vec::new();
        for &name in INFERENCE_PARAMS {
            let field = m.get(name).cloned().map(Field::Given).unwrap_or_default();
            let Some(value) = self.required(&[stage, "params", name], &field) else {
                continue;
            };
            let at = [stage, "params", name];
            match name {
                "batch_size" => {
                    let positive = value.text.parse::<u64>().is_ok_and(|n| n > 0)
                        && matches!(value.kind, ScalarKind::Integer | ScalarKind::String);
                    if !positive {
                        self.fail(
                            &at,
                            "zoo-case.params",
                            format!(
                                "`batch_size: {}` must be a positive integer (the inference batch size)",
                                value.text
                            ),
                        );
                    }
                }
                "dtype" if !INFERENCE_DTYPES.contains(&value.text.as_str()) => self.fail(
                    &at,
                    "zoo-case.params",
                    format!(
                        "`dtype: {}` is not an inference precision; one of: {}",
                        value.text,
                        INFERENCE_DTYPES.join(", ")
                    ),
                ),
                _ => {}
            }
            flags.push(self.flag(&at, name, &value));
        }
        if let Some(v) = m.get("others") {
            for (n, value) in self.others(&[stage, "params"], INFERENCE_PARAMS, v) {
                flags.push(self.flag(&[stage, "params", "others", &n], &n, &value));
            }
        }
        (self.violations.len() == before).then_some(flags)
    }
}
