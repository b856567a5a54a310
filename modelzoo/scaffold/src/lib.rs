//! `modelzoo new`: a model directory that is right from the first commit, rendered from the
//! template files in `templates/` (embedded at build time) plus its `model.yaml` entry. Apart
//! from run_scripts_template so that no `run_<model>` binary links the scaffolder.
//!
//! Placeholders are `{{name}}`, `{{title}}`, `{{Camel}}` (the name in CamelCase, for Rust type
//! names), `{{category}}`, `{{model_path}}`, and two rendered
//! from the standard argument spec: `{{args_table}}` (Markdown, one row per argument) and
//! `{{argparse_arguments}}` (the `parser.add_argument(...)` lines of argument.py). Existing
//! files are never overwritten.

use std::io::Write;
use std::path::{Path, PathBuf};

use model_config::{Framework, ModelEntry, ModelYaml, ModelYamlError};

use run_scripts_template::{ArgDef, ArgSpec, ArgType};

/// Which kind of model directory to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Tecorigin ModelZoo layout: README, requirements.txt, run_scripts/ with argument.py,
    /// formate_cmd.py, run_<name>.py and README.
    Python,
    /// A Rust model crate of this repository, the shape of modelzoo/resnet: Cargo.toml with a
    /// run_<name> binary, spec.yaml, build.rs, README and src/ with main, args, model, module
    /// and recipe — a two-layer perceptron on synthetic images that trains as it is.
    Rust,
}

/// One template file: its path below the kind's directory (may contain `{{name}}`) and text.
struct Template {
    path: &'static str,
    text: &'static str,
}

macro_rules! template {
    ($path:literal) => {
        Template {
            path: $path,
            text: include_str!(concat!("../templates/", $path)),
        }
    };
}

const PYTHON: &[Template] = &[
    template!("python/README.md"),
    template!("python/requirements.txt"),
    template!("python/run_scripts/README.md"),
    template!("python/run_scripts/argument.py"),
    template!("python/run_scripts/formate_cmd.py"),
    template!("python/run_scripts/run_{{name}}.py"),
];

const RUST: &[Template] = &[
    template!("rust/Cargo.toml"),
    template!("rust/README.md"),
    template!("rust/build.rs"),
    template!("rust/spec.yaml"),
    template!("rust/src/args.rs"),
    template!("rust/src/lib.rs"),
    template!("rust/src/main.rs"),
    template!("rust/src/model.rs"),
    template!("rust/src/module.rs"),
    template!("rust/src/recipe.rs"),
];

/// What to scaffold.
#[derive(Debug, Clone)]
pub struct NewModel {
    /// Model name: lowercase letters, digits and `_`, starting with a letter (`run_<name>`).
    pub name: String,
    pub kind: Kind,
    /// ModelZoo category (`Classification`, `NLP`, ...); the Python model lives under it.
    pub category: String,
    /// Zoo root: holds `model_config/model.yaml`; model paths are relative to it.
    pub root: PathBuf,
}

/// Everything `new` will create, computed without touching the disk.
#[derive(Debug, Clone)]
pub struct Plan {
    pub model_dir: PathBuf,
    /// Files to create: path and content.
    pub files: Vec<(PathBuf, String)>,
    /// The model.yaml that gets the entry (created when missing).
    pub model_yaml: PathBuf,
    pub entry: ModelEntry,
}

/// Why a scaffold cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("invalid model name `{name}`: use lowercase letters, digits and `_`, starting with a letter (it becomes run_{name})")]
    InvalidName { name: String },
    #[error(
        "invalid category `{category}`: use letters, digits, `_` or `-` (e.g. Classification, NLP)"
    )]
    InvalidCategory { category: String },
    #[error("refusing to overwrite existing files: {} — choose another name or remove them", list(.paths))]
    Exists { paths: Vec<PathBuf> },
    #[error("{}: model `{name}` already has an entry — choose another name or remove it", path.display())]
    EntryExists { path: PathBuf, name: String },
    #[error(transparent)]
    ModelYaml(#[from] ModelYamlError),
    #[error("cannot write {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Renders the scaffold and checks it can be written: a valid name, no existing file in the
/// way, no model.yaml entry of that name.
pub fn plan(req: &NewModel) -> Result<Plan, ScaffoldError> {
    let name = &req.name;
    let valid_name = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid_name {
        return Err(ScaffoldError::InvalidName { name: name.clone() });
    }
    let valid_category = !req.category.is_empty()
        && req
            .category
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_category {
        return Err(ScaffoldError::InvalidCategory {
            category: req.category.clone(),
        });
    }
    let model_path = match req.kind {
        Kind::Python => format!("{}/{}", req.category, name),
        Kind::Rust => format!("modelzoo/{name}"),
    };
    let model_dir = req.root.join(&model_path);
    let spec = ArgSpec::standard();
    let title = title_of(name);
    let vars: Vec<(&str, String)> = vec![
        ("{{name}}", name.clone()),
        ("{{title}}", title),
        ("{{Camel}}", camel_of(name)),
        ("{{category}}", req.category.clone()),
        ("{{model_path}}", model_path.clone()),
        ("{{args_table}}", args_table(&spec)),
        ("{{argparse_arguments}}", argparse_arguments(&spec)),
    ];
    let (templates, prefix) = match req.kind {
        Kind::Python => (PYTHON, "python/"),
        Kind::Rust => (RUST, "rust/"),
    };
    let files: Vec<(PathBuf, String)> = templates
        .iter()
        .map(|t| {
            let rel = render(t.path.trim_start_matches(prefix), &vars);
            (model_dir.join(rel), render(t.text, &vars))
        })
        .collect();
    let existing: Vec<PathBuf> = files
        .iter()
        .filter(|(p, _)| p.symlink_metadata().is_ok())
        .map(|(p, _)| p.clone())
        .collect();
    if !existing.is_empty() {
        return Err(ScaffoldError::Exists { paths: existing });
    }

    let model_yaml = req.root.join("model_config").join("model.yaml");
    if model_yaml.exists() {
        let index = ModelYaml::load(&model_yaml)?;
        if index.get(name).is_some() {
            return Err(ScaffoldError::EntryExists {
                path: model_yaml,
                name: name.clone(),
            });
        }
    }
    let entry = match req.kind {
        Kind::Python => ModelEntry {
            name: name.clone(),
            path: model_path,
            framework: Framework::Pytorch,
            category: req.category.clone(),
            devices: vec!["sdaa".into(), "cuda".into()],
            command: format!(
                "cd run_scripts && python3 run_{name}.py --model_name {name} --device {{device}} --step 10 --output_dir {{output_dir}}"
            ),
            log: "{output_dir}/dllogger.json".into(),
            metrics: vec!["train.loss".into(), "train.ips".into()],
            timeout: 1800,
        },
        Kind::Rust => ModelEntry {
            name: name.clone(),
            path: model_path,
            framework: Framework::RustTch,
            category: req.category.clone(),
            devices: vec!["cpu".into(), "cuda".into(), "sdaa".into()],
            command: format!(
                "run_{name} --device {{device}} --step 5 --output_dir {{output_dir}}"
            ),
            log: format!("{{output_dir}}/{name}_log.json"),
            metrics: vec!["train.loss".into(), "train.ips".into()],
            timeout: 600,
        },
    };
    Ok(Plan {
        model_dir,
        files,
        model_yaml,
        entry,
    })
}

/// Writes the plan: each file atomically and never over an existing one (a file that
/// appeared since [`plan`] is an error), then the model.yaml entry.
pub fn apply(plan: &Plan) -> Result<(), ScaffoldError> {
    for (path, text) in &plan.files {
        let err = |error| ScaffoldError::Write {
            path: path.clone(),
            error,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(err)?;
        let mut tmp = modelzoo_support::AtomicFile::create(path).map_err(err)?;
        tmp.file_mut().write_all(text.as_bytes()).map_err(err)?;
        tmp.commit_new().map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                ScaffoldError::Exists {
                    paths: vec![path.clone()],
                }
            } else {
                err(e)
            }
        })?;
    }
    ModelYaml::append_entry(&plan.model_yaml, &plan.entry)?;
    Ok(())
}

fn render(text: &str, vars: &[(&str, String)]) -> String {
    let mut out = text.to_string();
    for (key, value) in vars {
        out = out.replace(key, value);
    }
    out
}

/// `my_model2` → `MyModel2`.
fn camel_of(name: &str) -> String {
    name.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn title_of(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("")
}

/// Markdown table of every argument: flags, type, default, meaning.
pub fn args_table(spec: &ArgSpec) -> String {
    let mut out = String::from("| argument | type | default | meaning |\n|---|---|---|---|\n");
    for a in &spec.args {
        let mut flags = vec![format!("`--{}`", a.name)];
        flags.extend(a.aliases.iter().map(|x| format!("`--{x}`")));
        if let Some(s) = a.short {
            flags.push(format!("`-{s}`"));
        }
        let ty = match a.ty {
            ArgType::Int => "int",
            ArgType::Float => "float",
            ArgType::Bool => "switch",
            ArgType::String => "string",
            ArgType::Path => "path",
        };
        let default = match (a.ty, a.default_text()) {
            (ArgType::Bool, _) => "off".to_string(),
            (_, Some(d)) => format!("`{d}`"),
            (_, None) => "—".to_string(),
        };
        let mut help = a.help.replace('|', "\\|");
        if !a.choices.is_empty() {
            help.push_str(&format!(" One of: {}.", a.choices.join(", ")));
        }
        if a.repeatable {
            help.push_str(" Repeatable.");
        }
        out.push_str(&format!(
            "| {} | {ty} | {default} | {help} |\n",
            flags.join(", ")
        ));
    }
    out.trim_end().to_string()
}

/// The argparse `add_argument` calls for every argument, indented for `build_parser`.
pub fn argparse_arguments(spec: &ArgSpec) -> String {
    spec.args
        .iter()
        .map(argparse_line)
        .collect::<Vec<_>>()
        .join("\n")
}

fn argparse_line(a: &ArgDef) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(s) = a.short {
        parts.push(py_str(&format!("-{s}")));
    }
    parts.push(py_str(&format!("--{}", a.name)));
    parts.extend(a.aliases.iter().map(|x| py_str(&format!("--{x}"))));
    parts.push(format!("dest={}", py_str(&a.name)));
    match a.ty {
        ArgType::Bool => parts.push("action=\"store_true\"".into()),
        ty => {
            let py_ty = match ty {
                ArgType::Int => "int",
                ArgType::Float => "float",
                _ => "str",
            };
            parts.push(format!("type={py_ty}"));
            if a.repeatable {
                parts.push("action=\"append\"".into());
            }
            if let Some(d) = a.default_text() {
                let lit = match ty {
                    ArgType::Int | ArgType::Float => d,
                    _ => py_str(&d),
                };
                parts.push(format!("default={lit}"));
            }
            if !a.choices.is_empty() {
                let choices: Vec<String> = a
                    .choices
                    .iter()
                    .map(|c| match ty {
                        ArgType::Int | ArgType::Float => c.clone(),
                        _ => py_str(c),
                    })
                    .collect();
                parts.push(format!("choices=[{}]", choices.join(", ")));
            }
        }
    }
    if a.required {
        parts.push("required=True".into());
    }
    // argparse formats help strings with `%`.
    parts.push(format!("help={}", py_str(&a.help.replace('%', "%%"))));
    format!("    parser.add_argument({})", parts.join(", "))
}

/// A double-quoted Python string literal.
fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argparse_lines_quote_escape_and_type_every_form() {
        let spec = ArgSpec::from_yaml(
            r#"
args:
  - {name: lr, type: float, default: 0.1, help: "Rate (100% = \"full\")"}
  - {name: arch, type: string, default: a, choices: [a, b], required: true, help: h}
  - {name: override, short: o, type: string, repeatable: true, help: h}
  - {name: amp, type: bool, help: h}
"#,
            "test",
        )
        .unwrap();
        let lines: Vec<String> = spec.args.iter().map(argparse_line).collect();
        assert_eq!(
            lines,
            vec![
                r#"    parser.add_argument("--lr", dest="lr", type=float, default=0.1, help="Rate (100%% = \"full\")")"#,
                r#"    parser.add_argument("--arch", dest="arch", type=str, default="a", choices=["a", "b"], required=True, help="h")"#,
                r#"    parser.add_argument("-o", "--override", dest="override", type=str, action="append", help="h")"#,
                r#"    parser.add_argument("--amp", dest="amp", action="store_true", help="h")"#,
            ]
        );
        let table = args_table(&spec);
        assert!(
            table.contains("| `--override`, `-o` | string | — | h Repeatable. |"),
            "{table}"
        );
        assert!(table.contains("| `--amp` | switch | off | h |"), "{table}");
    }

    #[test]
    fn names_and_categories_are_checked_before_anything_is_rendered() {
        let req = |name: &str, category: &str| NewModel {
            name: name.into(),
            kind: Kind::Python,
            category: category.into(),
            root: PathBuf::from("/nonexistent-root"),
        };
        for bad in ["", "1net", "Net", "my-net", "a b", "../x"] {
            assert!(
                matches!(
                    plan(&req(bad, "NLP")),
                    Err(ScaffoldError::InvalidName { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            plan(&req("net", "../up")),
            Err(ScaffoldError::InvalidCategory { .. })
        ));
        let p = plan(&req("my_net2", "NLP")).unwrap();
        assert_eq!(p.model_dir, PathBuf::from("/nonexistent-root/NLP/my_net2"));
        assert!(p
            .files
            .iter()
            .any(|(f, _)| f.ends_with("run_scripts/run_my_net2.py")));
        assert!(
            p.files.iter().all(|(_, text)| !text.contains("{{")),
            "unrendered placeholder"
        );
        assert!(model_config::model_yaml::uses_step(&p.entry.command));
    }
}
