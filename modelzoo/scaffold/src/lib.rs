//! `modelzoo new`: a model directory that is right from the first commit, rendered from the
//! template files in `templates/` (embedded at build time) plus its `model.yaml` entry. Apart
//! from run_scripts_template so that no `run_<model>` binary links the scaffolder.
//!
//! Placeholders are `{{name}}`, `{{run}}` (the name in snake case: `run_<run>.py`, the
//! `--model_name`, the model.yaml entry), `{{title}}`, `{{Camel}}` (the name in CamelCase, for
//! Rust type names), `{{category}}`, `{{model_path}}`, two rendered from the standard argument
//! spec: `{{args_table}}` (Markdown, one row per argument) and `{{argparse_arguments}}` (the
//! `parser.add_argument(...)` lines of argument.py) — for a Python model without the kit's own
//! arguments —, and three of the Python launcher: `{{train_script}}` (the training script,
//! relative to the model directory), `{{forward}}` (the standard arguments it declares, read
//! from its argparse calls) and `{{path_args}}` (the standard arguments that are paths). A
//! Python model can be scaffolded around a training script that exists
//! ([`NewModel::train_script`]): what is missing is added, nothing is ever overwritten.
//!
//! The launcher runs the training script the way `modelzoo port` verified it: in the model
//! directory (whatever directory the launcher is started from), with only the standard
//! arguments the caller gave — argument.py gives the forwarded ones no default, so the
//! script's own defaults stand for everything the PR check's entry or case does not set.

use std::io::Write;
use std::path::{Path, PathBuf};

use model_config::{Framework, ModelEntry, ModelYaml, ModelYamlError};

use run_scripts_template::{ArgDef, ArgSpec, ArgType};

pub mod op;

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
    template!("python/train.py"),
    template!("python/run_scripts/README.md"),
    template!("python/run_scripts/argument.py"),
    template!("python/run_scripts/formate_cmd.py"),
    template!("python/run_scripts/run_{{run}}.py"),
];

/// Files of a Python model that an adopted directory may already have: kept as they are.
const KEPT_WHEN_PRESENT: &[&str] = &["README.md", "requirements.txt"];

/// The scaffold's own training script (replaced by [`NewModel::train_script`] when adopting).
const TRAIN_TEMPLATE: &str = "train.py";

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
    /// Model name. Rust: lowercase letters, digits and `_`, starting with a letter
    /// (`run_<name>`). Python: the directory name as the public zoo writes them (`ResNet`,
    /// `MobileNet_V2`, `SE-ResNet`): letters, digits, `_`, `-`, starting with a letter; its
    /// snake case (`mobilenet_v2`) names `run_<name>.py` and the model.yaml entry.
    pub name: String,
    pub kind: Kind,
    /// ModelZoo category (`Classification`, `NLP`, ...); the Python model lives under it.
    pub category: String,
    /// Zoo root: holds `model_config/model.yaml`; model paths are relative to it.
    pub root: PathBuf,
    /// The model directory relative to `root`, when not `<category>/<name>` (Python) or
    /// `modelzoo/<name>` (Rust).
    pub dir: Option<String>,
    /// Python: adopt this existing training script (relative to the model directory) instead of
    /// writing the scaffold's own `train.py` — e.g. a project `modelzoo port` migrated.
    pub train_script: Option<PathBuf>,
}

/// Everything `new` will create, computed without touching the disk.
#[derive(Debug, Clone)]
pub struct Plan {
    pub model_dir: PathBuf,
    /// Files to create: path and content.
    pub files: Vec<(PathBuf, String)>,
    /// Files of the scaffold an adopted directory already has, kept as they are.
    pub kept: Vec<PathBuf>,
    /// What the porter must still do for the PR check (an adopted script without --step, ...).
    pub notes: Vec<String>,
    /// The model.yaml that gets the entry (created when missing).
    pub model_yaml: PathBuf,
    pub entry: ModelEntry,
}

/// Why a scaffold cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("invalid model name `{name}`: {rule}")]
    InvalidName { name: String, rule: &'static str },
    #[error("invalid op library name `{name}`: {rule}")]
    InvalidOpName { name: String, rule: &'static str },
    #[error(
        "invalid model directory `{dir}`: give a relative path inside the zoo root, without `..`"
    )]
    InvalidDir { dir: String },
    #[error("--train-script {}: {why}", path.display())]
    TrainScript { path: PathBuf, why: String },
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
    check_name(name, req.kind)?;
    let run = snake_of(name);
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
    let model_path = match (&req.dir, req.kind) {
        (Some(dir), _) => {
            let p = Path::new(dir);
            let plain = p.is_relative()
                && p.components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !plain || dir.is_empty() {
                return Err(ScaffoldError::InvalidDir { dir: dir.clone() });
            }
            dir.trim_end_matches('/').to_string()
        }
        (None, Kind::Python) => format!("{}/{}", req.category, name),
        (None, Kind::Rust) => format!("modelzoo/{name}"),
    };
    let model_dir = req.root.join(&model_path);
    let spec = ArgSpec::standard();
    let title = title_of(name);
    let python = req.kind == Kind::Python;
    let (train_rel, train_text) = match (&req.train_script, python) {
        (Some(script), true) => (script.clone(), adopted_script(&model_dir, script)?),
        (Some(script), false) => {
            return Err(ScaffoldError::TrainScript {
                path: script.clone(),
                why: "only a Python model adopts a training script".into(),
            })
        }
        (None, _) => (
            PathBuf::from(TRAIN_TEMPLATE),
            render_train_template(name, &run),
        ),
    };
    let vars: Vec<(&str, String)> = vec![
        ("{{name}}", name.clone()),
        ("{{run}}", run.clone()),
        ("{{title}}", title),
        ("{{Camel}}", camel_of(name)),
        ("{{category}}", req.category.clone()),
        ("{{model_path}}", model_path.clone()),
        ("{{args_table}}", args_table(&spec, python)),
        ("{{argparse_arguments}}", argparse_arguments(&spec, python)),
        ("{{train_script}}", py_str(&train_rel.to_string_lossy())),
        ("{{forward}}", forward_map(&spec, &train_text)),
        ("{{path_args}}", path_args(&spec)),
    ];
    let (templates, prefix) = match req.kind {
        Kind::Python => (PYTHON, "python/"),
        Kind::Rust => (RUST, "rust/"),
    };
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    let mut kept: Vec<PathBuf> = Vec::new();
    for t in templates {
        let rel = render(t.path.trim_start_matches(prefix), &vars);
        let path = model_dir.join(&rel);
        if rel == TRAIN_TEMPLATE && req.train_script.is_some() {
            continue;
        }
        if req.train_script.is_some()
            && KEPT_WHEN_PRESENT.contains(&rel.as_str())
            && path.symlink_metadata().is_ok()
        {
            kept.push(path);
            continue;
        }
        files.push((path, render(t.text, &vars)));
    }
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
        if index.get(&run).is_some() {
            return Err(ScaffoldError::EntryExists {
                path: model_yaml,
                name: run.clone(),
            });
        }
    }
    let declared = declared_flags(&train_text);
    let mut notes = Vec::new();
    if python {
        for (flag, why) in [
            (
                "--output_dir",
                "the model.yaml entry's log is {output_dir}/dllogger.json",
            ),
            ("--step", "the PR check runs a short --step run"),
        ] {
            let alias = if flag == "--step" { "--steps" } else { flag };
            if !declared.iter().any(|f| f == flag || f == alias) {
                notes.push(format!(
                    "{} declares no {flag}: {why}; add it (and tcap_dllogger logging, docs/port.md) before `modelzoo ci`",
                    train_rel.display()
                ));
            }
        }
    }
    let entry = match req.kind {
        Kind::Python => ModelEntry {
            name: run.clone(),
            path: model_path,
            framework: Framework::Pytorch,
            category: req.category.clone(),
            devices: if declared.iter().any(|f| f == "--device") {
                vec!["cpu".into(), "cuda".into(), "sdaa".into()]
            } else {
                // A ported script without --device runs where its code puts it: sdaa.
                vec!["sdaa".into()]
            },
            // Run from the model directory, as the ModelZoo's check runs a case (`cd <run_dir>
            // && python run_scripts/run_<name>.py`) and `modelzoo port` ran the script.
            command: format!(
                "python run_scripts/run_{run}.py --model_name {run} --device {{device}} --step 10 --output_dir {{output_dir}}"
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
        kept,
        model_yaml,
        entry,
        notes,
    })
}

/// The model name rule of each kind (see [`NewModel::name`]).
fn check_name(name: &str, kind: Kind) -> Result<(), ScaffoldError> {
    let (ok, rule) = match kind {
        Kind::Rust => (
            name.starts_with(|c: char| c.is_ascii_lowercase())
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "a Rust model's name is lowercase letters, digits and `_`, starting with a letter (it becomes the binary run_<name>)",
        ),
        Kind::Python => (
            name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "a Python model's name is letters, digits, `_` and `-`, starting with a letter (`ResNet`, `MobileNet_V2`, `SE-ResNet`)",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(ScaffoldError::InvalidName {
            name: name.to_string(),
            rule,
        })
    }
}

/// `MobileNet_V2` → `mobilenet_v2`, `SE-ResNet` → `se_resnet`.
fn snake_of(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

fn render_train_template(name: &str, run: &str) -> String {
    let text = PYTHON
        .iter()
        .find(|t| t.path == "python/train.py")
        .map_or("", |t| t.text);
    render(
        text,
        &[
            ("{{name}}", name.to_string()),
            ("{{run}}", run.to_string()),
            ("{{title}}", title_of(name)),
        ],
    )
}

/// The text of the training script an existing model directory brings.
fn adopted_script(model_dir: &Path, script: &Path) -> Result<String, ScaffoldError> {
    let err = |why: String| ScaffoldError::TrainScript {
        path: script.to_path_buf(),
        why,
    };
    if script.is_absolute()
        || script
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(err(
            "give it relative to the model directory (e.g. train.py)".into(),
        ));
    }
    let path = model_dir.join(script);
    match path.metadata() {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(err(format!("{} is not a regular file", path.display()))),
        Err(e) => return Err(err(format!("{}: {e}", path.display()))),
    }
    std::fs::read_to_string(&path).map_err(|e| err(format!("{}: {e}", path.display())))
}

/// The option strings (`--batch_size`, `--bs`, `-b`) a Python script passes to argparse's
/// `add_argument` — read from its text, never run.
pub fn declared_flags(script: &str) -> Vec<String> {
    let mut flags = Vec::new();
    let mut rest = script;
    while let Some(at) = rest.find("add_argument(") {
        rest = &rest[at + "add_argument(".len()..];
        let mut args = rest;
        // The leading string literals of the call are its option strings.
        loop {
            let trimmed = args.trim_start();
            let Some(quote) = trimmed.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                break;
            };
            let body = &trimmed[1..];
            let Some(end) = body.find(quote) else { break };
            let flag = &body[..end];
            if !flag.starts_with('-') {
                break;
            }
            flags.push(flag.to_string());
            args = body[end + 1..].trim_start();
            match args.strip_prefix(',') {
                Some(after) => args = after,
                None => break,
            }
        }
    }
    flags
}

/// The launcher's `FORWARD` dict: each standard argument (not the kit's own, not the launcher's)
/// that `script` declares, with the flag it declares it under.
fn forward_map(spec: &ArgSpec, script: &str) -> String {
    let declared = declared_flags(script);
    let mut entries: Vec<String> = Vec::new();
    for a in spec.args.iter().filter(|a| !a.kit_only) {
        if LAUNCHER_ARGS.contains(&a.name.as_str()) {
            continue;
        }
        let names = std::iter::once(&a.name).chain(a.aliases.iter());
        let found = names
            .flat_map(|n| [format!("--{n}"), format!("--{}", n.replace('_', "-"))])
            .find(|f| declared.contains(f));
        if let Some(flag) = found {
            entries.push(format!("    {}: {},", py_str(&a.name), py_str(&flag)));
        }
    }
    if entries.is_empty() {
        "{}".to_string()
    } else {
        format!("{{\n{}\n}}", entries.join("\n"))
    }
}

/// The launcher's `PATHS` set: the standard arguments (not the kit's own) whose values are
/// paths. The launcher makes a relative one absolute from the directory it was started in
/// before it runs the training script in the model directory, so `--output_dir ./out` means
/// the same wherever the launcher is started.
fn path_args(spec: &ArgSpec) -> String {
    let names: Vec<String> = spec
        .args
        .iter()
        .filter(|a| !a.kit_only && a.ty == ArgType::Path)
        .map(|a| py_str(&a.name))
        .collect();
    if names.is_empty() {
        "set()".into()
    } else {
        format!("{{{}}}", names.join(", "))
    }
}

/// The standard arguments the Python launcher itself consumes (torchrun's, `--print_cmd`).
const LAUNCHER_ARGS: &[&str] = &[
    "nproc_per_node",
    "nnode",
    "node_rank",
    "master_addr",
    "master_port",
    "print_cmd",
];

/// Writes the plan: each file atomically and never over an existing one (a file that
/// appeared since [`plan`] is an error), then the model.yaml entry.
pub fn apply(plan: &Plan) -> Result<(), ScaffoldError> {
    write_new_files(&plan.files)?;
    ModelYaml::append_entry(&plan.model_yaml, &plan.entry)?;
    Ok(())
}

/// Writes each file atomically, creating its directory, never over an existing file.
fn write_new_files(files: &[(PathBuf, String)]) -> Result<(), ScaffoldError> {
    for (path, text) in files {
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
    Ok(())
}

pub(crate) fn render(text: &str, vars: &[(&str, String)]) -> String {
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

/// Markdown table of every argument (without the kit's own for a Python model): flags, type,
/// default, meaning.
pub fn args_table(spec: &ArgSpec, python: bool) -> String {
    let mut out = String::from("| argument | type | default | meaning |\n|---|---|---|---|\n");
    for a in spec.args.iter().filter(|a| !(python && a.kit_only)) {
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
            // Not passed on unless given: the training script's own default stands.
            _ if python && forwarded(a) => "the training script's".to_string(),
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

/// The argparse `add_argument` calls for every argument (without the kit's own for a Python
/// model), indented for `build_parser`.
/// For a Python model, the arguments the launcher passes on to the training script get no
/// default: one not given stays `None` and is not passed, so the script's own default stands
/// (issue #37: argument.py's `--lr 0.1 --batch_size 32` went over the script's own).
pub fn argparse_arguments(spec: &ArgSpec, python: bool) -> String {
    spec.args
        .iter()
        .filter(|a| !(python && a.kit_only))
        .map(|a| argparse_line(a, !(python && forwarded(a))))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether the Python launcher passes `a` on to the training script (when the script declares
/// it) rather than consuming it itself.
fn forwarded(a: &ArgDef) -> bool {
    !a.kit_only && !LAUNCHER_ARGS.contains(&a.name.as_str())
}

/// One `parser.add_argument(...)` call; `with_default`: the spec's default is written (the
/// launcher's own arguments), else the argument is `None` (a switch `False`) unless given.
fn argparse_line(a: &ArgDef, with_default: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(s) = a.short {
        parts.push(py_str(&format!("-{s}")));
    }
    parts.push(py_str(&format!("--{}", a.name)));
    parts.extend(a.aliases.iter().map(|x| py_str(&format!("--{x}"))));
    parts.push(format!("dest={}", py_str(&a.name)));
    match a.ty {
        // A switch that also takes a value (`--autocast True`, as the ModelZoo's check passes it).
        ArgType::Bool => parts.push("type=str2bool, nargs=\"?\", const=True, default=False".into()),
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
            if let Some(d) = a.default_text().filter(|_| with_default) {
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
        let lines: Vec<String> = spec.args.iter().map(|a| argparse_line(a, true)).collect();
        assert_eq!(
            lines,
            vec![
                r#"    parser.add_argument("--lr", dest="lr", type=float, default=0.1, help="Rate (100%% = \"full\")")"#,
                r#"    parser.add_argument("--arch", dest="arch", type=str, default="a", choices=["a", "b"], required=True, help="h")"#,
                r#"    parser.add_argument("-o", "--override", dest="override", type=str, action="append", help="h")"#,
                r#"    parser.add_argument("--amp", dest="amp", type=str2bool, nargs="?", const=True, default=False, help="h")"#,
            ]
        );
        let table = args_table(&spec, false);
        assert!(
            table.contains("| `--override`, `-o` | string | — | h Repeatable. |"),
            "{table}"
        );
        assert!(table.contains("| `--amp` | switch | off | h |"), "{table}");
    }

    #[test]
    fn names_and_categories_are_checked_before_anything_is_rendered() {
        let req = |name: &str, kind: Kind, category: &str| NewModel {
            name: name.into(),
            kind,
            category: category.into(),
            root: PathBuf::from("/nonexistent-root"),
            dir: None,
            train_script: None,
        };
        for bad in ["", "1net", "a b", "../x", "-x", "net.py"] {
            assert!(
                matches!(
                    plan(&req(bad, Kind::Python, "NLP")),
                    Err(ScaffoldError::InvalidName { .. })
                ),
                "{bad}"
            );
        }
        // The public zoo's directory names are Python model names; a Rust one is a binary name.
        for bad in ["Net", "my-net"] {
            assert!(
                matches!(
                    plan(&req(bad, Kind::Rust, "NLP")),
                    Err(ScaffoldError::InvalidName { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            plan(&req("net", Kind::Python, "../up")),
            Err(ScaffoldError::InvalidCategory { .. })
        ));
        let p = plan(&req("MobileNet_V2", Kind::Python, "Classification")).unwrap();
        assert_eq!(
            p.model_dir,
            PathBuf::from("/nonexistent-root/Classification/MobileNet_V2")
        );
        assert_eq!(p.entry.name, "mobilenet_v2");
        assert!(p
            .files
            .iter()
            .any(|(f, _)| f.ends_with("run_scripts/run_mobilenet_v2.py")));
        assert!(p.files.iter().any(|(f, _)| f.ends_with("train.py")));
        assert!(
            p.files.iter().all(|(_, text)| !text.contains("{{")),
            "unrendered placeholder"
        );
        assert!(model_config::model_yaml::uses_step(&p.entry.command));
        let p = plan(&req("SE-ResNet", Kind::Python, "Classification")).unwrap();
        assert_eq!(p.entry.name, "se_resnet");
    }

    /// Issue #37: argument.py's defaults went over the training script's own. The arguments
    /// the launcher passes on have no default (not given: not passed); the launcher's own
    /// keep theirs; the path arguments are the ones it makes absolute; the entry runs the
    /// launcher from the model directory.
    #[test]
    fn forwarded_arguments_have_no_default_and_the_entry_runs_in_the_model_directory() {
        let spec = ArgSpec::standard();
        let argparse = argparse_arguments(&spec, true);
        let line = |name: &str| {
            argparse
                .lines()
                .find(|l| l.contains(&format!("dest=\"{name}\"")))
                .unwrap_or_else(|| panic!("{name}: {argparse}"))
                .to_string()
        };
        for name in ["lr", "batch_size", "seed", "epoch", "step", "output_dir"] {
            assert!(!line(name).contains("default="), "{}", line(name));
        }
        assert!(line("autocast").contains("default=False"));
        for (name, default) in [("nproc_per_node", "1"), ("master_port", "29500")] {
            assert!(
                line(name).contains(&format!("default={default}")),
                "{}",
                line(name)
            );
        }
        // The Rust kind's table keeps the spec's defaults; the Python one says whose they are.
        let table = args_table(&spec, true);
        assert!(
            table.contains("| `--lr` | float | the training script's |"),
            "{table}"
        );
        assert!(
            table.contains("| `--nproc_per_node` | int | `1` |"),
            "{table}"
        );
        assert!(args_table(&spec, false).contains("| `--lr` | float | `0.1` |"));
        assert_eq!(path_args(&spec), "{\"dataset_path\", \"output_dir\"}");
        let p = plan(&NewModel {
            name: "Net".into(),
            kind: Kind::Python,
            category: "NLP".into(),
            root: PathBuf::from("/nonexistent-root"),
            dir: None,
            train_script: None,
        })
        .unwrap();
        assert!(
            p.entry
                .command
                .starts_with("python run_scripts/run_net.py "),
            "{}",
            p.entry.command
        );
        let launcher = &p
            .files
            .iter()
            .find(|(f, _)| f.ends_with("run_scripts/run_net.py"))
            .unwrap()
            .1;
        assert!(
            launcher.contains("TRAIN_SCRIPT = \"train.py\"\n"),
            "{launcher}"
        );
        assert!(launcher.contains("subprocess.call(words, cwd=MODEL_DIR)"));
    }

    #[test]
    fn the_launcher_forwards_only_what_the_training_script_declares() {
        let script = r#"
p.add_argument("--epochs", type=int)
p.add_argument('--batch-size', '-b', type=int)
parser.add_argument(
    "--lr", "--learning-rate", type=float)
p.add_argument("--dump_dir")  # not a standard argument
p.add_argument("--seed")
"#;
        assert_eq!(
            declared_flags(script),
            [
                "--epochs",
                "--batch-size",
                "-b",
                "--lr",
                "--learning-rate",
                "--dump_dir",
                "--seed"
            ]
        );
        let map = forward_map(&ArgSpec::standard(), script);
        assert!(map.contains("\"epoch\": \"--epochs\""), "{map}");
        assert!(map.contains("\"batch_size\": \"--batch-size\""), "{map}");
        assert!(map.contains("\"lr\": \"--lr\""), "{map}");
        assert!(map.contains("\"seed\": \"--seed\""), "{map}");
        // Not declared (or the kit's own): never passed on.
        for absent in [
            "step",
            "device",
            "logging_freq",
            "dump",
            "amp_dtype",
            "nproc_per_node",
        ] {
            assert!(!map.contains(&format!("\"{absent}\"")), "{absent}: {map}");
        }
        // The scaffold's own train.py takes every standard argument the launcher passes on.
        let own = forward_map(&ArgSpec::standard(), &render_train_template("Net", "net"));
        for name in [
            "model_name",
            "epoch",
            "step",
            "batch_size",
            "dataset_path",
            "lr",
            "device",
            "autocast",
            "num_workers",
            "seed",
            "output_dir",
        ] {
            assert!(own.contains(&format!("\"{name}\"")), "{name}: {own}");
        }
    }
}
