//! A `run_<model>` command line generated from an [`ArgSpec`]: a clap builder [`Command`] with
//! the ModelZoo's snake_case long names, and [`ResolvedArgs`], the typed view of what was parsed
//! that can print itself back as the fully resolved launch command (`--print_cmd`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::builder::PossibleValuesParser;
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command};

use crate::spec::{ArgDef, ArgSpec, ArgType};

/// Build the clap command for `program` from a (merged) spec: every argument as `--name`,
/// its aliases as visible long aliases, defaults shown in `--help`, values checked by type and
/// against `choices`.
pub fn build_command(program: &str, about: &str, spec: &ArgSpec) -> Command {
    let mut cmd = Command::new(program.to_string())
        .about(about.to_string())
        .disable_version_flag(true)
        .next_line_help(false);
    for def in &spec.args {
        cmd = cmd.arg(build_arg(def));
    }
    cmd
}

fn build_arg(def: &ArgDef) -> Arg {
    let mut arg = Arg::new(def.name.clone())
        .long(def.name.clone())
        .help(def.help.clone())
        .required(def.required);
    if !def.aliases.is_empty() {
        arg = arg.visible_aliases(def.aliases.clone());
    }
    if let Some(c) = def.short {
        arg = arg.short(c);
    }
    if def.ty == ArgType::Bool {
        return arg.action(ArgAction::SetTrue);
    }
    arg = arg.action(if def.repeatable {
        ArgAction::Append
    } else {
        ArgAction::Set
    });
    arg = arg.value_name(match def.ty {
        ArgType::Int => "INT",
        ArgType::Float => "FLOAT",
        ArgType::Path => "PATH",
        ArgType::String | ArgType::Bool => "STR",
    });
    arg = if !def.choices.is_empty() {
        arg.value_parser(PossibleValuesParser::new(def.choices.clone()))
    } else {
        match def.ty {
            ArgType::Int => arg
                .value_parser(clap::value_parser!(i64))
                .allow_negative_numbers(true),
            ArgType::Float => arg
                .value_parser(clap::value_parser!(f64))
                .allow_negative_numbers(true),
            ArgType::Path => arg.value_parser(clap::value_parser!(PathBuf)),
            ArgType::String | ArgType::Bool => arg.value_parser(clap::value_parser!(String)),
        }
    };
    if let Some(default) = def.default_text() {
        arg = arg.default_value(default);
    }
    arg
}

/// The typed value of one argument.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Path(PathBuf),
    /// A repeatable argument's values, in command-line order.
    List(Vec<String>),
}

/// One argument after parsing: its definition, its value (if any) and whether the user typed it
/// (as opposed to its default) — so that flags given on the command line can win over a config.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedArg {
    pub def: ArgDef,
    pub value: Option<ArgValue>,
    pub explicit: bool,
}

/// Every argument of a `run_<model>` invocation, resolved and typed.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedArgs {
    program: String,
    args: Vec<ResolvedArg>,
}

impl ResolvedArgs {
    /// Parse `argv` (including the program name) against `spec`. Errors are clap's own (unknown
    /// flag with suggestions, bad type, value outside the choices with the valid list, value
    /// outside the argument's declared `range`: `--lr -1: must be a finite number > 0`); call
    /// `.exit()` on them for clap's exit code 2 (0 for `--help`).
    pub fn parse_from<I, T>(
        program: &str,
        about: &str,
        spec: &ArgSpec,
        argv: I,
    ) -> Result<ResolvedArgs, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let mut cmd = build_command(program, about, spec);
        let matches = cmd.try_get_matches_from_mut(argv)?;
        let resolved = ResolvedArgs::from_matches(program, spec, &matches);
        match resolved.range_violation() {
            Some(why) => Err(cmd.error(clap::error::ErrorKind::ValueValidation, why)),
            None => Ok(resolved),
        }
    }

    /// The first argument whose value lies outside its spec `range`, as
    /// `--name value: must be ...`.
    pub fn range_violation(&self) -> Option<String> {
        self.args.iter().find_map(|a| match &a.value {
            Some(ArgValue::Int(v)) => a.def.range_violation(*v as f64, &v.to_string()),
            Some(ArgValue::Float(v)) => a.def.range_violation(*v, &v.to_string()),
            _ => None,
        })
    }

    /// The typed view of matches produced by [`build_command`] for the same spec.
    pub fn from_matches(program: &str, spec: &ArgSpec, m: &ArgMatches) -> ResolvedArgs {
        let args = spec
            .args
            .iter()
            .map(|def| {
                let name = def.name.as_str();
                let explicit = m.value_source(name) == Some(ValueSource::CommandLine);
                let value = match def.ty {
                    ArgType::Bool => Some(ArgValue::Bool(m.get_flag(name))),
                    _ if def.repeatable => Some(ArgValue::List(
                        m.get_many::<String>(name)
                            .map(|v| v.cloned().collect())
                            .unwrap_or_default(),
                    )),
                    // Choices are parsed as strings whatever the declared type.
                    _ if !def.choices.is_empty() => m.get_one::<String>(name).map(|s| {
                        match def.ty {
                            ArgType::Int => s.parse().map(ArgValue::Int).ok(),
                            ArgType::Float => s.parse().map(ArgValue::Float).ok(),
                            ArgType::Path => Some(ArgValue::Path(PathBuf::from(s))),
                            _ => None,
                        }
                        .unwrap_or_else(|| ArgValue::Str(s.clone()))
                    }),
                    ArgType::Int => m.get_one::<i64>(name).map(|v| ArgValue::Int(*v)),
                    ArgType::Float => m.get_one::<f64>(name).map(|v| ArgValue::Float(*v)),
                    ArgType::Path => m
                        .get_one::<PathBuf>(name)
                        .map(|v| ArgValue::Path(v.clone())),
                    ArgType::String => m.get_one::<String>(name).map(|v| ArgValue::Str(v.clone())),
                };
                ResolvedArg {
                    def: def.clone(),
                    value,
                    explicit,
                }
            })
            .collect();
        ResolvedArgs {
            program: program.to_string(),
            args,
        }
    }

    /// All arguments in spec order.
    pub fn args(&self) -> &[ResolvedArg] {
        &self.args
    }

    /// The argument called `name`.
    ///
    /// # Panics
    /// When `name` is not in the spec: the spec is embedded and checked at build time, so
    /// asking for an argument it lacks is a programming error, not bad input.
    pub fn arg(&self, name: &str) -> &ResolvedArg {
        self.args
            .iter()
            .find(|a| a.def.name == name)
            .unwrap_or_else(|| panic!("argument --{name} is not in the spec"))
    }

    /// Give `--name` a value as if typed (e.g. the `--node_rank` of another node's launch
    /// command); a name outside the spec is ignored.
    pub fn set(&mut self, name: &str, value: ArgValue) {
        if let Some(a) = self.args.iter_mut().find(|a| a.def.name == name) {
            a.value = Some(value);
            a.explicit = true;
        }
    }

    /// Whether the user gave `--name` on the command line (not just its default).
    pub fn is_explicit(&self, name: &str) -> bool {
        self.arg(name).explicit
    }

    /// An `int` argument's value.
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.arg(name).value {
            Some(ArgValue::Int(v)) => Some(v),
            _ => None,
        }
    }

    /// A `float` argument's value (an int value is widened).
    pub fn float(&self, name: &str) -> Option<f64> {
        match self.arg(name).value {
            Some(ArgValue::Float(v)) => Some(v),
            Some(ArgValue::Int(v)) => Some(v as f64),
            _ => None,
        }
    }

    /// A switch: true when given.
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.arg(name).value, Some(ArgValue::Bool(true)))
    }

    /// A `string` (or choice) argument's value.
    pub fn string(&self, name: &str) -> Option<&str> {
        match &self.arg(name).value {
            Some(ArgValue::Str(v)) => Some(v),
            _ => None,
        }
    }

    /// A `path` argument's value.
    pub fn path(&self, name: &str) -> Option<&Path> {
        match &self.arg(name).value {
            Some(ArgValue::Path(v)) => Some(v),
            _ => None,
        }
    }

    /// A repeatable argument's values (empty when not given).
    pub fn list(&self, name: &str) -> &[String] {
        match &self.arg(name).value {
            Some(ArgValue::List(v)) => v,
            _ => &[],
        }
    }

    /// The fully resolved launch command (the ModelZoo's `formate_cmd`): the program, then every
    /// argument that has a value, one per line with ` \` continuations, shell-quoted where
    /// needed. `--print_cmd` itself is left out so the output can be run as is.
    pub fn to_command_line(&self) -> String {
        let mut words: Vec<Vec<String>> = vec![vec![self.program.clone()]];
        for a in &self.args {
            if a.def.name == "print_cmd" {
                continue;
            }
            let flag = format!("--{}", a.def.name);
            match &a.value {
                None | Some(ArgValue::Bool(false)) => {}
                Some(ArgValue::Bool(true)) => words.push(vec![flag]),
                Some(ArgValue::List(items)) => {
                    for item in items {
                        words.push(vec![flag.clone(), item.clone()]);
                    }
                }
                Some(ArgValue::Int(v)) => words.push(vec![flag, v.to_string()]),
                Some(ArgValue::Float(v)) => words.push(vec![flag, v.to_string()]),
                Some(ArgValue::Str(v)) => words.push(vec![flag, v.clone()]),
                Some(ArgValue::Path(v)) => words.push(vec![flag, v.display().to_string()]),
            }
        }
        let lines: Vec<String> = words
            .iter()
            .map(|line| line.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "))
            .collect();
        let mut out = String::new();
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                out.push_str("    ");
            }
            out.push_str(line);
            out.push_str(if i + 1 < lines.len() { " \\\n" } else { "\n" });
        }
        out
    }
}

/// POSIX-shell quoting; a value with a NUL byte cannot be quoted and is written as is (a path
/// with NUL cannot exist, so this only concerns hand-typed strings).
fn quote(word: &str) -> String {
    shlex::try_quote(word)
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| word.to_string())
}

/// A typed view of parsed arguments, generated by [`crate::typed::struct_source`].
pub trait FromArgs: Sized {
    /// Read every field from `args`, parsed against a spec that contains the struct's arguments.
    fn from_args(args: &ResolvedArgs) -> Self;
}

/// The value of an argument that has a default: present once parsed against the spec the
/// struct was generated from.
///
/// # Panics
/// When it is absent: the struct and the parser's spec disagree, a build error, not bad input.
pub fn present_arg<T>(value: Option<T>, name: &str) -> T {
    value.unwrap_or_else(|| {
        panic!("--{name} has a default in the spec but no value: the typed arguments were generated from another spec")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ArgSpec {
        let extras = ArgSpec::from_yaml(
            "args:\n  - {name: optimizer, type: string, default: sgd, choices: [sgd, adamw], help: h}\n  - {name: momentum, type: float, default: 0.9, help: m}\nrefine:\n  - {name: model_name, default: resnet50, choices: [resnet18, resnet50]}\n",
            "test.yaml",
        )
        .unwrap();
        ArgSpec::standard().merged(&extras, "test.yaml").unwrap()
    }

    #[test]
    fn defaults_aliases_and_explicitness() {
        let r = ResolvedArgs::parse_from(
            "run_x",
            "",
            &spec(),
            [
                "run_x",
                "--bs",
                "8",
                "-o",
                "Engine.max_steps=3",
                "-o",
                "A.b=1",
                "--amp",
            ],
        )
        .unwrap();
        assert_eq!(r.int("batch_size"), Some(8));
        assert!(r.is_explicit("batch_size"));
        assert!(!r.is_explicit("epoch"));
        assert_eq!(r.int("epoch"), Some(1));
        assert_eq!(r.float("lr"), Some(0.1));
        assert!(r.flag("autocast"));
        assert!(!r.flag("print_cmd"));
        assert_eq!(r.string("model_name"), Some("resnet50"));
        assert_eq!(r.list("override"), ["Engine.max_steps=3", "A.b=1"]);
        assert_eq!(r.path("dataset_path"), None);
    }

    #[test]
    fn bad_input_is_a_clap_error_with_exit_code_2() {
        let s = spec();
        let cases: [(&[&str], &str); 3] = [
            (&["run_x", "--batch_sise", "3"], "--batch_size"),
            (&["run_x", "--bs", "x"], "invalid digit"),
            (&["run_x", "--model_name", "vgg"], "resnet18, resnet50"),
        ];
        for (argv, want) in cases {
            let e = ResolvedArgs::parse_from("run_x", "", &s, argv.iter().copied()).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{argv:?}");
            let text = e.to_string();
            assert!(text.contains(want), "{argv:?}: {text}");
        }
    }

    #[test]
    fn values_outside_the_declared_range_exit_2_naming_the_flag() {
        let extras = ArgSpec::from_yaml(
            "args:\n  - {name: label_smoothing, type: float, default: 0.0, range: \"[0, 1)\", help: h}\n  - {name: momentum, type: float, default: 0.9, range: \"[0, inf)\", help: m}\n",
            "test.yaml",
        )
        .unwrap();
        let s = ArgSpec::standard().merged(&extras, "test.yaml").unwrap();
        let cases: [(&[&str], &str); 8] = [
            (&["--lr", "-1"], "--lr -1: must be a finite number > 0"),
            (&["--lr", "0"], "--lr 0: must be a finite number > 0"),
            (&["--lr", "nan"], "--lr NaN: must be a finite number > 0"),
            (&["--lr", "inf"], "--lr inf: must be a finite number > 0"),
            (
                &["--label_smoothing", "5"],
                "--label_smoothing 5: must be a number in [0, 1)",
            ),
            (
                &["--momentum", "-0.5"],
                "--momentum -0.5: must be a finite number >= 0",
            ),
            (&["--bs", "0"], "--batch_size 0: must be a positive integer"),
            (
                &["--master_port", "70000"],
                "--master_port 70000: must be between 1 and 65535",
            ),
        ];
        for (extra, want) in cases {
            let argv = std::iter::once("run_x").chain(extra.iter().copied());
            let e = ResolvedArgs::parse_from("run_x", "", &s, argv).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{extra:?}");
            assert!(e.to_string().contains(want), "{extra:?}: {e}");
        }
        let ok = [
            "run_x",
            "--lr",
            "1e-3",
            "--label_smoothing",
            "0.1",
            "--momentum",
            "0",
        ];
        let r = ResolvedArgs::parse_from("run_x", "", &s, ok).unwrap();
        assert_eq!(r.float("label_smoothing"), Some(0.1));
    }

    #[test]
    fn command_line_round_trips() {
        let s = spec();
        let r = ResolvedArgs::parse_from(
            "run_x",
            "",
            &s,
            [
                "run_x",
                "--bs",
                "4",
                "--output_dir",
                "out dir/it's",
                "-o",
                "X.y=a b",
                "--amp",
                "--lr",
                "0.05",
                "--print_cmd",
            ],
        )
        .unwrap();
        let line = r.to_command_line();
        assert!(
            line.starts_with("run_x \\\n    --model_name resnet50 \\\n"),
            "{line}"
        );
        assert!(!line.contains("print_cmd"));
        let argv = shlex::split(&line.replace("\\\n", " ")).unwrap();
        let back = ResolvedArgs::parse_from("run_x", "", &s, argv).unwrap();
        for (a, b) in r.args().iter().zip(back.args()) {
            if a.def.name != "print_cmd" {
                assert_eq!(a.value, b.value, "--{}", a.def.name);
            }
        }
        assert_eq!(back.path("output_dir"), Some(Path::new("out dir/it's")));
    }
}
