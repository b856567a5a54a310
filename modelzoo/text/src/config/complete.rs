//! What a whole section holds. A config file cut off (a failed copy, an editor crash, a
//! `head -c`) still parses: the cut section simply lacks its last keys, and serde fills them
//! with defaults — `Optimizer` cut before `max_lr` trained at 5e-5 instead of the file's rate.
//! So every section a `-c` file holds must give the keys every complete config of that
//! section gives (the shipped configs, FleetX's `pretrain_gpt_base.yaml` and the seeds'
//! `gpt_345m_single_card.yaml` all do); a file without one is refused naming the section and
//! the keys.

use model_config::fleetx::ConfigTree;

/// A key a complete section gives: one of `paths` (full dotted paths; the alternatives are
/// its spellings — `beta1` / `adam_beta1` — or its places in the two layouts), with a value
/// (not empty), or only present when `may_be_empty` (an empty value has a meaning there:
/// `input_dir:` is the built-in corpus, `dp_degree:` whatever the run has).
#[derive(Debug, Clone, Copy)]
pub struct Need {
    pub paths: &'static [&'static str],
    pub may_be_empty: bool,
}

const fn set(paths: &'static [&'static str]) -> Need {
    Need {
        paths,
        may_be_empty: false,
    }
}

const fn present(paths: &'static [&'static str]) -> Need {
    Need {
        paths,
        may_be_empty: true,
    }
}

/// The keys of each section but `Model` (each model's own: [`super::ModelSection::REQUIRED_KEYS`]).
/// Keys whose default is what a missing key means anyway (`accumulate_steps`, `ckpt_dir`,
/// `tensor_fusion`, the samplers' and loaders') are not listed; a cut before them leaves a
/// listed key missing, or changes nothing.
pub const SECTION_KEYS: &[(&str, &[Need])] = &[
    ("Global", &[set(&["Global.seed"])]),
    (
        "Engine",
        &[
            set(&["Engine.max_steps"]),
            set(&["Engine.num_train_epochs"]),
            set(&["Engine.logging_freq"]),
            set(&["Engine.eval_freq"]),
            set(&["Engine.eval_iters"]),
            set(&["Engine.mix_precision.use_pure_fp16"]),
            set(&["Engine.mix_precision.scale_loss"]),
            set(&["Engine.save_load.save_steps"]),
            set(&["Engine.save_load.output_dir"]),
        ],
    ),
    (
        "Data",
        &[
            set(&[
                "Data.batch_size.micro_batch_size",
                "Global.micro_batch_size",
            ]),
            present(&["Data.dataset.input_dir", "Data.Train.dataset.input_dir"]),
            set(&["Data.dataset.split", "Data.Train.dataset.split"]),
            set(&["Data.dataset.max_seq_len", "Data.Train.dataset.max_seq_len"]),
        ],
    ),
    (
        "Optimizer",
        &[
            set(&["Optimizer.weight_decay"]),
            set(&["Optimizer.adam_beta1", "Optimizer.beta1"]),
            set(&["Optimizer.adam_beta2", "Optimizer.beta2"]),
            set(&["Optimizer.adam_epsilon", "Optimizer.epsilon"]),
            set(&["Optimizer.lr.decay_steps"]),
            set(&["Optimizer.lr.warmup_rate"]),
            set(&["Optimizer.lr.max_lr"]),
            set(&["Optimizer.lr.min_lr"]),
            set(&["Optimizer.grad_clip"]),
        ],
    ),
    (
        "Generation",
        &[
            set(&["Generation.top_k"]),
            set(&["Generation.top_p"]),
            set(&["Generation.temperature"]),
            set(&["Generation.min_dec_len"]),
            set(&["Generation.max_dec_len"]),
            set(&["Generation.num_return_sequences"]),
            set(&["Generation.decode_strategy"]),
        ],
    ),
    (
        "Distributed",
        &[
            present(&["Distributed.dp_degree"]),
            present(&["Distributed.mp_degree"]),
            present(&["Distributed.pp_degree"]),
        ],
    ),
    ("Profiler", &[set(&["Profiler.enable"])]),
    ("Fused", &[set(&["Fused.tensor_fusion"])]),
];

/// A key a section of the file lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingKey {
    /// `Optimizer`.
    pub section: String,
    /// Below the section (`lr.max_lr`), alternatives joined with ` / `.
    pub key: String,
}

/// `path` as segments.
fn segments(path: &str) -> Vec<&str> {
    path.split('.').collect()
}

/// The keys `tree` (the file with its bases and the overrides) lacks in the sections the file
/// holds (`file_sections`, before overrides: an override completes a key, never a section),
/// in table order; `model_keys` are `Model`'s (none to leave `Model` unchecked).
pub fn missing_keys(
    tree: &ConfigTree,
    file_sections: &[String],
    model_keys: &[&str],
) -> Vec<MissingKey> {
    let held = |section: &str| file_sections.iter().any(|s| s == section);
    let mut missing = Vec::new();
    if held("Model") {
        for key in model_keys {
            if !tree.is_set(&["Model", key]) {
                missing.push(MissingKey {
                    section: "Model".into(),
                    key: key.to_string(),
                });
            }
        }
    }
    for (section, needs) in SECTION_KEYS {
        if !held(section) {
            continue;
        }
        for need in *needs {
            let given = need.paths.iter().any(|p| {
                let path = segments(p);
                if need.may_be_empty {
                    tree.get(&path).is_some()
                } else {
                    tree.is_set(&path)
                }
            });
            if !given {
                let key = need
                    .paths
                    .iter()
                    .map(|p| {
                        p.strip_prefix(section)
                            .and_then(|k| k.strip_prefix('.'))
                            .unwrap_or(p)
                    })
                    .collect::<Vec<_>>()
                    .join(" / ");
                missing.push(MissingKey {
                    section: section.to_string(),
                    key,
                });
            }
        }
    }
    missing
}

/// `` `Optimizer` has no lr.max_lr, lr.min_lr (or leaves them empty); `Model` has no … ``.
pub fn describe(missing: &[MissingKey]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut sections: Vec<&str> = Vec::new();
    for m in missing {
        if !sections.contains(&m.section.as_str()) {
            sections.push(&m.section);
        }
    }
    for section in sections {
        let keys: Vec<&str> = missing
            .iter()
            .filter(|m| m.section == section)
            .map(|m| m.key.as_str())
            .collect();
        parts.push(format!(
            "`{section}` has no {} (or leaves {} empty)",
            keys.join(", "),
            if keys.len() == 1 { "it" } else { "them" }
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn tree(text: &str) -> ConfigTree {
        ConfigTree::from_str(text, Path::new("t.yaml")).unwrap()
    }

    #[test]
    fn a_section_lacking_keys_names_them_and_alternatives_count() {
        let t = tree(
            "Optimizer:\n  weight_decay: 0.01\n  beta1: 0.9\n  beta2: 0.95\n  epsilon: 1.0e-8\n  lr:\n    decay_steps: 10\n    warmup_rate: 0.1\n",
        );
        let m = missing_keys(&t, &["Optimizer".into()], &[]);
        let keys: Vec<&str> = m.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(keys, ["lr.max_lr", "lr.min_lr", "grad_clip"]);
        assert_eq!(
            describe(&m),
            "`Optimizer` has no lr.max_lr, lr.min_lr, grad_clip (or leaves them empty)"
        );
        // Sections the file does not hold are not checked.
        assert!(missing_keys(&t, &[], &[]).is_empty());
    }

    #[test]
    fn empty_is_missing_unless_empty_has_a_meaning() {
        let t = tree("Data:\n  dataset:\n    input_dir:\n    split: '1'\n    max_seq_len:\nGlobal:\n  seed: 1\n  micro_batch_size: 2\n");
        let m = missing_keys(&t, &["Data".into(), "Global".into()], &[]);
        assert_eq!(
            describe(&m),
            "`Data` has no dataset.max_seq_len / Train.dataset.max_seq_len (or leaves it empty)"
        );
        let t = tree("Model:\n  vocab_size: 8\n  hidden_size:\n");
        let m = missing_keys(&t, &["Model".into()], &["vocab_size", "hidden_size"]);
        assert_eq!(
            describe(&m),
            "`Model` has no hidden_size (or leaves it empty)"
        );
    }
}
