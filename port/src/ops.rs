//! `--op`: a project's custom CUDA op, routed on each side to an implementation that runs there
//! (issue #39). The original's extension cannot be built without nvcc, so on the CPU baseline its
//! `torch.autograd.Function` wrapper runs the project's pure-PyTorch twin (or `--baseline-op`),
//! and on the port the device implementation `--op` names. The shim does the routing
//! (`MODELZOO_PORT_OPS`), stands in for the unbuilt extension module (`MODELZOO_PORT_OP_STUBS`)
//! and records what ran (`MODELZOO_PORT_OPS_RECORD`); the report says what ran where.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use serde::{Deserialize, Serialize};

use migrate::custom_ops::CustomOps;

/// One route: the wrapper (`Class` or `module:Class`) and the implementation (`module:function`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpRoute {
    pub wrapper: String,
    pub target: String,
}

impl std::str::FromStr for OpRoute {
    type Err = String;

    /// `Class=module:function` or `module:Class=module:function`.
    fn from_str(s: &str) -> Result<OpRoute, String> {
        let (wrapper, target) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?}: expected CLASS=module:function"))?;
        let (wrapper, target) = (wrapper.trim(), target.trim());
        let ident = |t: &str| {
            !t.is_empty()
                && t.split('.').all(|p| {
                    !p.is_empty()
                        && !p.starts_with(|c: char| c.is_ascii_digit())
                        && p.chars().all(|c| c.is_alphanumeric() || c == '_')
                })
        };
        let class = wrapper.rsplit(':').next().unwrap_or(wrapper);
        let wrapper_ok = ident(class)
            && !class.contains('.')
            && wrapper.split_once(':').is_none_or(|(m, _)| ident(m));
        let target_ok = target
            .split_once(':')
            .is_some_and(|(m, f)| ident(m) && ident(f) && !f.contains('.'));
        if !wrapper_ok || !target_ok {
            return Err(format!(
                "{s:?}: expected CLASS=module:function (a Python class name, optionally \
                 module:Class, and a dotted module with a function name)"
            ));
        }
        Ok(OpRoute {
            wrapper: wrapper.to_string(),
            target: target.to_string(),
        })
    }
}

impl OpRoute {
    fn class(&self) -> &str {
        self.wrapper.rsplit(':').next().unwrap_or(&self.wrapper)
    }
}

/// The routes of both sides, decided before anything runs, and the project's extensions.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OpRouting {
    /// What the port's wrappers run (`--op`).
    pub port: Vec<OpRoute>,
    /// What the original's wrappers run (`--baseline-op`, else the twin the project ships).
    pub baseline: Vec<OpRoute>,
    /// Extension modules the routed wrappers call (stand-ins where they are not built).
    pub stubs: Vec<String>,
    /// Every extension module of the project (to tell "not built here" from a broken original).
    pub extensions: Vec<String>,
    /// Wrappers the project has that no route covers, with their twin when it has one.
    pub unrouted: Vec<(String, Option<String>)>,
}

/// How many times a side's routed wrapper ran, and what it ran (the shim's record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutedCalls {
    #[serde(rename = "impl")]
    pub target: String,
    pub calls: u64,
    /// It ran in float64 (the original's second run with routes: the op's rounding noise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub float64: bool,
}

/// The routes for `--op` / `--baseline-op` on the project `src`. Err: a route names a wrapper
/// the project does not have (the message lists those it has).
pub fn plan(src: &Path, port: &[OpRoute], baseline: &[OpRoute]) -> Result<OpRouting, String> {
    let found: CustomOps = migrate::custom_ops::find(src);
    let known = |r: &OpRoute| {
        found
            .wrappers
            .iter()
            .find(|w| w.class == r.class() && (!r.wrapper.contains(':') || w.target == r.wrapper))
    };
    let listing = || {
        if found.wrappers.is_empty() {
            "the project has no torch.autograd.Function calling a C++/CUDA extension".to_string()
        } else {
            let names: Vec<String> = found.wrappers.iter().map(|w| w.target.clone()).collect();
            format!("the project's custom-op wrappers: {}", names.join(", "))
        }
    };
    let mut routing = OpRouting {
        extensions: found.extensions.iter().map(|e| e.name.clone()).collect(),
        ..OpRouting::default()
    };
    for r in port.iter().chain(baseline) {
        if known(r).is_none() {
            return Err(format!(
                "--op {}={}: no torch.autograd.Function {} calling a C++/CUDA extension in {} ({})",
                r.wrapper,
                r.target,
                r.wrapper,
                src.display(),
                listing()
            ));
        }
    }
    routing.port = port.to_vec();
    routing.baseline = baseline.to_vec();
    for r in port {
        let w = known(r).expect("checked above");
        if !routing.baseline.iter().any(|b| b.class() == r.class()) {
            if let Some(twin) = &w.twin {
                routing.baseline.push(OpRoute {
                    wrapper: r.wrapper.clone(),
                    target: twin.target.clone(),
                });
            }
        }
    }
    for w in &found.wrappers {
        let routed = routing
            .port
            .iter()
            .chain(&routing.baseline)
            .any(|r| r.class() == w.class);
        if routed {
            if !routing.stubs.contains(&w.extension) && !w.extension.starts_with("torch.ops.") {
                routing.stubs.push(w.extension.clone());
            }
        } else {
            routing
                .unrouted
                .push((w.target.clone(), w.twin.as_ref().map(|t| t.target.clone())));
        }
    }
    Ok(routing)
}

impl OpRouting {
    /// The shim's environment for one side; `record` is where it writes what ran. `float64`: the
    /// routed ops run in float64 (the original's second run): the port runs another
    /// implementation of each routed op than the original, so the two sides agree only to the
    /// op's rounding, which training amplifies step by step; the spread between the original's
    /// two runs then measures that (the noise the step rule allows) instead of being 0.
    pub(crate) fn env(
        &self,
        baseline: bool,
        record: &Path,
        float64: bool,
    ) -> Vec<(&'static str, OsString)> {
        let routes = if baseline { &self.baseline } else { &self.port };
        if routes.is_empty() {
            return Vec::new();
        }
        let joined: Vec<String> = routes
            .iter()
            .map(|r| format!("{}={}", r.wrapper, r.target))
            .collect();
        let mut env = vec![
            ("MODELZOO_PORT_OPS", joined.join(";").into()),
            ("MODELZOO_PORT_OP_STUBS", self.stubs.join(",").into()),
            ("MODELZOO_PORT_OPS_RECORD", record.as_os_str().to_owned()),
        ];
        if float64 {
            env.push(("MODELZOO_PORT_OPS_FLOAT64", "1".into()));
        }
        env
    }

    /// The project's extension a crash says is missing (`No module named 'X'`), if any.
    pub(crate) fn missing_extension(&self, error: &str) -> Option<&str> {
        let name = error
            .split_once("No module named '")?
            .1
            .split('\'')
            .next()?;
        self.extensions
            .iter()
            .find(|e| e.as_str() == name || name.starts_with(&format!("{e}.")))
            .map(String::as_str)
    }
}

/// What the shim recorded of a side's routed wrappers (rank 0), empty when nothing was routed.
pub(crate) fn read_record(dir: &Path) -> BTreeMap<String, RoutedCalls> {
    modelzoo_support::input::read_bounded(&dir.join("ops.rank0.json"), 1 << 20, "op record")
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_parse_and_bad_ones_say_the_form() {
        let r: OpRoute = "MSDeformAttnFunction=modelzoo_ops.msdeform:ms_deform_attn"
            .parse()
            .unwrap();
        assert_eq!(r.class(), "MSDeformAttnFunction");
        let r: OpRoute = "models.ops.f:Fn=pkg.mod:fn".parse().unwrap();
        assert_eq!(r.class(), "Fn");
        for bad in [
            "Fn", "Fn=mod", "Fn=:f", "=m:f", "F n=m:f", "Fn=m:f.g", "a.B=m:f",
        ] {
            let e = bad.parse::<OpRoute>().unwrap_err();
            assert!(e.contains("CLASS=module:function"), "{bad}: {e}");
        }
    }

    fn fixture() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/custom_op")
    }

    #[test]
    fn the_original_gets_the_twin_and_both_sides_stub_the_extension() {
        let port = ["ScaledTanhFunction=sdaa_ops:scaled_tanh".parse().unwrap()];
        let r = plan(&fixture(), &port, &[]).unwrap();
        assert_eq!(r.baseline[0].target, "ops.scaled_tanh:scaled_tanh_pytorch");
        assert_eq!(r.stubs, ["ScaledTanhCUDA"]);
        assert!(r.unrouted.is_empty());
        let env = r.env(true, Path::new("/rec"), false);
        assert_eq!(
            env[0].1,
            "ScaledTanhFunction=ops.scaled_tanh:scaled_tanh_pytorch"
        );
        assert!(!env.iter().any(|(k, _)| *k == "MODELZOO_PORT_OPS_FLOAT64"));
        // The original's second run computes its routed ops in float64 (the noise of the op's
        // rounding); nothing is routed, nothing is set.
        let env = r.env(true, Path::new("/rec"), true);
        assert!(env.contains(&("MODELZOO_PORT_OPS_FLOAT64", "1".into())));
        // --baseline-op wins over the twin.
        let base = ["ops.scaled_tanh:ScaledTanhFunction=sdaa_ops:scaled_tanh"
            .parse()
            .unwrap()];
        let r = plan(&fixture(), &port, &base).unwrap();
        assert_eq!(r.baseline.len(), 1);
        assert_eq!(r.baseline[0].target, "sdaa_ops:scaled_tanh");
        // Nothing routed: the wrapper is listed with its twin, nothing is stubbed.
        let r = plan(&fixture(), &[], &[]).unwrap();
        assert!(r.stubs.is_empty() && r.env(false, Path::new("/rec"), true).is_empty());
        assert_eq!(
            r.unrouted,
            [(
                "ops.scaled_tanh:ScaledTanhFunction".to_string(),
                Some("ops.scaled_tanh:scaled_tanh_pytorch".to_string())
            )]
        );
        // A wrapper the project does not have (or in another module) is refused.
        for bad in ["Nope=m:f", "other.mod:ScaledTanhFunction=m:f"] {
            let e = plan(&fixture(), &[bad.parse().unwrap()], &[]).unwrap_err();
            assert!(e.contains("ops.scaled_tanh:ScaledTanhFunction"), "{e}");
        }
    }

    #[test]
    fn a_missing_module_is_told_from_a_missing_extension() {
        let routing = OpRouting {
            extensions: vec!["ScaledTanhCUDA".into()],
            ..OpRouting::default()
        };
        assert_eq!(
            routing.missing_extension("ModuleNotFoundError: No module named 'ScaledTanhCUDA'"),
            Some("ScaledTanhCUDA")
        );
        assert_eq!(
            routing.missing_extension("ModuleNotFoundError: No module named 'scipy'"),
            None
        );
    }
}
