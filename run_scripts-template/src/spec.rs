//! Argument specs: the ModelZoo standard arguments and each model's extras, as data.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The standard spec's YAML text, embedded so every binary carries the same source of truth.
pub const STANDARD_SPEC_YAML: &str = include_str!("../spec/standard.yaml");

/// The value type of one argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArgType {
    Int,
    Float,
    Bool,
    String,
    Path,
}

/// One command-line argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgDef {
    /// Long name, snake_case as in the ModelZoo (`--batch_size`).
    pub name: String,
    /// Further long forms (`--bs`).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// One-letter short form (`-c`).
    #[serde(default)]
    pub short: Option<char>,
    #[serde(rename = "type")]
    pub ty: ArgType,
    /// Default value as YAML scalar; `None` means no default (absent unless given).
    #[serde(default)]
    pub default: Option<serde_yaml::Value>,
    #[serde(default)]
    pub required: bool,
    /// Allowed values, if restricted.
    #[serde(default)]
    pub choices: Vec<String>,
    /// May be given several times (collected in order).
    #[serde(default)]
    pub repeatable: bool,
    /// Allowed values of an `int` / `float` argument as an interval (`(0, inf)`, `[0, 1)`,
    /// `[1, 65535]`), checked when the command line is parsed so a value no run can use is
    /// a usage error up front rather than a failure mid-run. A `float` with a range must
    /// also be finite (no `nan`, `inf`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<String>,
    /// The kit's own argument (dumps, FleetX configs, ...): `run_<model>` binaries have it, a
    /// Python ModelZoo model's argument.py does not (its training script would reject it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kit_only: bool,
    pub help: String,
}

/// An interval of allowed values (see [`ArgDef::range`]); `None` bounds are unbounded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// Lower bound and whether it is included.
    pub min: Option<(f64, bool)>,
    /// Upper bound and whether it is included.
    pub max: Option<(f64, bool)>,
}

impl Range {
    /// Parse interval notation: `[` / `]` include a bound, `(` / `)` exclude it, `inf` /
    /// `-inf` leave that side open (`(0, inf)`, `[0, 1)`, `[-1, inf)`).
    pub fn parse(text: &str) -> Result<Range, String> {
        let bad = |why: &str| {
            format!("range {text:?}: {why} (expected interval notation such as \"(0, inf)\" or \"[0, 1)\")")
        };
        let t = text.trim();
        let (lo_incl, rest) = match (t.strip_prefix('['), t.strip_prefix('(')) {
            (Some(rest), _) => (true, rest),
            (None, Some(rest)) => (false, rest),
            _ => return Err(bad("must start with [ or (")),
        };
        let (hi_incl, body) = match (rest.strip_suffix(']'), rest.strip_suffix(')')) {
            (Some(body), _) => (true, body),
            (None, Some(body)) => (false, body),
            _ => return Err(bad("must end with ] or )")),
        };
        let (lo, hi) = body
            .split_once(',')
            .ok_or_else(|| bad("needs two bounds separated by a comma"))?;
        let bound = |s: &str| -> Result<f64, String> {
            match s.trim() {
                "inf" | "+inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                other => other
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| bad(&format!("bound {other:?} is not a number"))),
            }
        };
        let (lo, hi) = (bound(lo)?, bound(hi)?);
        if lo == f64::INFINITY || hi == f64::NEG_INFINITY || lo > hi {
            return Err(bad("the lower bound must not exceed the upper"));
        }
        if (lo.is_infinite() && lo_incl) || (hi.is_infinite() && hi_incl) {
            return Err(bad(
                "an infinite bound is always excluded: write (-inf or inf)",
            ));
        }
        Ok(Range {
            min: lo.is_finite().then_some((lo, lo_incl)),
            max: hi.is_finite().then_some((hi, hi_incl)),
        })
    }

    /// Whether `v` lies in the interval (NaN and ±inf never do).
    pub fn contains(&self, v: f64) -> bool {
        let above = self
            .min
            .is_none_or(|(m, incl)| if incl { v >= m } else { v > m });
        let below = self
            .max
            .is_none_or(|(m, incl)| if incl { v <= m } else { v < m });
        v.is_finite() && above && below
    }

    /// What a value must be, for messages: "a finite number > 0", "a positive integer",
    /// "between 1 and 65535", "a number in [0, 1)".
    pub fn describe(&self, ty: ArgType) -> String {
        let int = ty == ArgType::Int;
        let op = |incl: bool, ge: &'static str, gt: &'static str| if incl { ge } else { gt };
        match (self.min, self.max) {
            (Some((m, true)), None) if int && m == 1.0 => "a positive integer".into(),
            (Some((m, incl)), None) if int => format!("an integer {} {m}", op(incl, ">=", ">")),
            (Some((m, incl)), None) => format!("a finite number {} {m}", op(incl, ">=", ">")),
            (None, Some((m, incl))) if int => format!("an integer {} {m}", op(incl, "<=", "<")),
            (None, Some((m, incl))) => format!("a finite number {} {m}", op(incl, "<=", "<")),
            (Some((lo, true)), Some((hi, true))) if int => format!("between {lo} and {hi}"),
            (Some((lo, li)), Some((hi, hi_incl))) => format!(
                "{} in {}{lo}, {hi}{}",
                if int { "an integer" } else { "a number" },
                if li { '[' } else { '(' },
                if hi_incl { ']' } else { ')' }
            ),
            (None, None) if int => "an integer".into(),
            (None, None) => "a finite number".into(),
        }
    }
}

impl ArgDef {
    /// The parsed [`ArgDef::range`] (`None` without one; an invalid one is refused when the
    /// spec is loaded).
    pub fn parsed_range(&self) -> Option<Range> {
        self.range.as_deref().and_then(|r| Range::parse(r).ok())
    }

    /// Why `value` is outside this argument's range, as `--name value: must be ...`; `None`
    /// when it is allowed (or there is no range).
    /// `shown` is the value as the user should see it.
    pub fn range_violation(&self, value: f64, shown: &str) -> Option<String> {
        let range = self.parsed_range()?;
        (!range.contains(value)).then(|| {
            format!(
                "--{} {shown}: must be {}",
                self.name,
                range.describe(self.ty)
            )
        })
    }

    /// The default rendered as command-line text (`None` when there is none).
    pub fn default_text(&self) -> Option<String> {
        self.default.as_ref().map(|v| match v {
            serde_yaml::Value::String(s) => s.clone(),
            other => serde_yaml::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_string(),
        })
    }
}

/// An ordered list of arguments (the standard spec, a model's extras, or both merged).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgSpec {
    #[serde(default)]
    pub args: Vec<ArgDef>,
    /// A model spec's refinements of standard arguments (its own default and choices for
    /// `--model_name`, say); applied by [`ArgSpec::merged`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refine: Vec<ArgRefinement>,
}

/// A model's narrowing of a standard argument: a new default and/or a closed set of choices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgRefinement {
    /// Name of the standard argument being refined.
    pub name: String,
    #[serde(default)]
    pub default: Option<serde_yaml::Value>,
    #[serde(default)]
    pub choices: Vec<String>,
}

/// A spec that cannot be used, with where and why.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("cannot read argument spec {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("argument spec {origin}: {source}")]
    Yaml {
        origin: String,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("argument spec {origin}: {message}")]
    Invalid { origin: String, message: String },
}

impl ArgSpec {
    /// The ModelZoo standard arguments.
    pub fn standard() -> ArgSpec {
        ArgSpec::from_yaml(STANDARD_SPEC_YAML, "spec/standard.yaml")
            .expect("embedded standard spec is valid (checked by tests)")
    }

    /// Parse and check a spec; `origin` names it in errors. A model's spec is user YAML, so it
    /// goes through model_config's depth guard like every other YAML the project reads.
    pub fn from_yaml(text: &str, origin: &str) -> Result<ArgSpec, SpecError> {
        use model_config::yaml::{self, YamlError};
        let spec: ArgSpec = yaml::from_str(text).map_err(|e| match e {
            YamlError::Parse(source) => SpecError::Yaml {
                origin: origin.to_string(),
                source,
            },
            too_deep => SpecError::Invalid {
                origin: format!("{origin}:{}", too_deep.line().unwrap_or(1)),
                message: too_deep.to_string(),
            },
        })?;
        spec.check(origin)?;
        Ok(spec)
    }

    /// Read a spec file.
    pub fn from_file(path: &Path) -> Result<ArgSpec, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|source| SpecError::Io {
            path: path.display().to_string(),
            source,
        })?;
        ArgSpec::from_yaml(&text, &path.display().to_string())
    }

    /// The standard spec followed by a model's extras; a name or alias defined twice is an error.
    /// The model's `refine` entries replace the default / choices of the named standard
    /// arguments; refining an argument that does not exist is an error.
    pub fn merged(&self, extras: &ArgSpec, origin: &str) -> Result<ArgSpec, SpecError> {
        let mut merged = ArgSpec {
            args: self.args.iter().chain(&extras.args).cloned().collect(),
            refine: Vec::new(),
        };
        for r in self.refine.iter().chain(&extras.refine) {
            let Some(arg) = merged.args.iter_mut().find(|a| a.name == r.name) else {
                return Err(SpecError::Invalid {
                    origin: origin.to_string(),
                    message: format!("refine: no argument --{} to refine", r.name),
                });
            };
            if r.default.is_some() {
                arg.default = r.default.clone();
            }
            if !r.choices.is_empty() {
                arg.choices = r.choices.clone();
            }
        }
        merged.check(origin)?;
        Ok(merged)
    }

    /// Look an argument up by name.
    pub fn get(&self, name: &str) -> Option<&ArgDef> {
        self.args.iter().find(|a| a.name == name)
    }

    fn check(&self, origin: &str) -> Result<(), SpecError> {
        let invalid = |message: String| SpecError::Invalid {
            origin: origin.to_string(),
            message,
        };
        let mut seen = HashSet::new();
        let mut shorts = HashSet::new();
        for arg in &self.args {
            for long in std::iter::once(&arg.name).chain(&arg.aliases) {
                if long.is_empty() || !long.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(invalid(format!(
                        "argument name {long:?} must be snake_case"
                    )));
                }
                if !seen.insert(long.clone()) {
                    return Err(invalid(format!("argument --{long} is defined twice")));
                }
            }
            if let Some(c) = arg.short {
                if !shorts.insert(c) {
                    return Err(invalid(format!("short flag -{c} is defined twice")));
                }
            }
            if arg.ty == ArgType::Bool && arg.required {
                return Err(invalid(format!("switch --{} cannot be required", arg.name)));
            }
            if let Some(default) = arg.default_text() {
                let ok = match arg.ty {
                    ArgType::Int => default.parse::<i64>().is_ok(),
                    ArgType::Float => default.parse::<f64>().is_ok(),
                    ArgType::Bool => false,
                    ArgType::String | ArgType::Path => true,
                };
                if !ok {
                    return Err(invalid(format!(
                        "default {default:?} of --{} is not a valid {:?} (switches take no default)",
                        arg.name, arg.ty
                    )));
                }
            }
            if arg.repeatable && (arg.ty == ArgType::Bool || arg.default.is_some()) {
                return Err(invalid(format!(
                    "repeatable --{} must be a valued argument without a default",
                    arg.name
                )));
            }
            if let Some(text) = &arg.range {
                if !matches!(arg.ty, ArgType::Int | ArgType::Float) || arg.repeatable {
                    return Err(invalid(format!(
                        "--{}: only a single int or float argument can have a range",
                        arg.name
                    )));
                }
                Range::parse(text).map_err(|e| invalid(format!("--{}: {e}", arg.name)))?;
                let default = arg
                    .default_text()
                    .and_then(|d| Some((d.parse::<f64>().ok()?, d)));
                if let Some(why) = default.and_then(|(v, d)| arg.range_violation(v, &d)) {
                    return Err(invalid(format!("the default is out of range: {why}")));
                }
            }
            if let (Some(default), false) = (arg.default_text(), arg.choices.is_empty()) {
                if !arg.choices.contains(&default) {
                    return Err(invalid(format!(
                        "default {default:?} of --{} is not among its choices {:?}",
                        arg.name, arg.choices
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_spec_has_every_modelzoo_argument() {
        let spec = ArgSpec::standard();
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
            "nproc_per_node",
            "nnode",
            "node_rank",
            "master_addr",
            "master_port",
            "output_dir",
            "resume",
            "config",
            "override",
            "print_cmd",
        ] {
            assert!(spec.get(name).is_some(), "standard spec lacks --{name}");
        }
        assert_eq!(
            spec.get("batch_size").unwrap().aliases,
            vec!["bs".to_string()]
        );
        assert_eq!(spec.get("config").unwrap().short, Some('c'));
        assert!(spec.get("override").unwrap().repeatable);
    }

    #[test]
    fn duplicate_names_and_bad_defaults_are_rejected() {
        let extras =
            ArgSpec::from_yaml("args:\n  - {name: bs, type: int, help: x}\n", "m.yaml").unwrap();
        let err = ArgSpec::standard().merged(&extras, "m.yaml").unwrap_err();
        assert!(err.to_string().contains("--bs is defined twice"), "{err}");

        let err = ArgSpec::from_yaml(
            "args:\n  - {name: a, type: string, default: z, choices: [x, y], help: h}\n",
            "m.yaml",
        )
        .unwrap_err();
        assert!(err.to_string().contains("not among its choices"), "{err}");

        for (range, want) in [
            (
                "\"[0, 1)\"",
                "the default is out of range: --a 5: must be a number in [0, 1)",
            ),
            ("\"0..1\"", "must start with [ or ("),
            ("\"(1, 0)\"", "must not exceed"),
            ("\"[0, inf]\"", "always excluded"),
        ] {
            let yaml = format!(
                "args:\n  - {{name: a, type: float, default: 5, range: {range}, help: h}}\n"
            );
            let err = ArgSpec::from_yaml(&yaml, "m.yaml").unwrap_err();
            assert!(err.to_string().contains(want), "{range}: {err}");
        }
        let err = ArgSpec::from_yaml(
            "args:\n  - {name: a, type: string, range: \"(0, inf)\", help: h}\n",
            "m.yaml",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("only a single int or float"),
            "{err}"
        );

        let err = ArgSpec::from_yaml(
            "args:\n  - {name: a, type: int, help: h, typo: 1}\n",
            "m.yaml",
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown field `typo`"), "{err}");
    }

    /// Issue #13: a spec nested 100,000 deep is refused by the depth guard (file, line,
    /// limit), not after libyaml's quadratic scan.
    #[test]
    fn nesting_past_the_limit_is_refused() {
        let n = 100_000;
        let text = format!(
            "args:\n  - {{name: a, type: int, help: {}{}}}\n",
            "[".repeat(n),
            "]".repeat(n)
        );
        let err = ArgSpec::from_yaml(&text, "m.yaml").unwrap_err();
        assert!(
            err.to_string()
                .contains("argument spec m.yaml:2: collections nested more than 128 levels deep"),
            "{err}"
        );
    }
}
