//! `modelzoo op`: the custom-op tools (docs/op.md). `op check` is the acceptance check of one
//! op — an implementation on the device against a reference in float64 on the CPU, forward
//! and backward, over the cases a Python function yields, on contiguous and non-contiguous
//! inputs, judged by msprobe's standard (cosine, small-value and relative bounds, the ratio to
//! the reference run in the same dtype). The work is the kit's Python harness
//! (`python/modelzoo_opcheck`), run with the user's Python; this command finds it, sets the
//! environment (the kit's `.venv`, the emulator's `torch_sdaa` where there is no card), prints
//! the table, writes `--json` and sets the exit code: 0 pass, 1 fail, 2 could not run (import
//! error, no `cases`, device unavailable, harness crashed — each named).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::Context;
use modelzoo_ci::env::{command_env, SdaaBackend};
use modelzoo_support::kit::{python_path_with, Kit};
use serde_json::Value;

mod new;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: OpCommand,
}

#[derive(clap::Subcommand)]
pub enum OpCommand {
    /// Check an op implementation on the device against a float64 reference on the CPU.
    Check(CheckArgs),
    /// Scaffold an op library for the sdaa device and the CPU: C++ registered with
    /// TORCH_LIBRARY (CPU, PrivateUse1 = sdaa, Autograd), a Python package that builds it on
    /// first import, `cases` for `op check`, a unittest test.
    New(new::NewArgs),
}

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The reference: MODULE:FUNCTION, run in float64 on the CPU (MODULE from the current
    /// directory or PYTHONPATH).
    #[arg(long = "ref", value_name = "MOD:FN")]
    pub reference: String,
    /// The implementation under check: MODULE:FUNCTION, run on --device.
    #[arg(long = "impl", value_name = "MOD:FN")]
    pub implementation: String,
    /// The cases: MODULE:FUNCTION, `cases(dtype, device, seed)` yielding `(name, args,
    /// kwargs)` with tensors on the device, `requires_grad` where a gradient is wanted.
    #[arg(long, value_name = "MOD:FN")]
    pub inputs: String,
    /// Where the implementation runs: sdaa (the card, else the kit's emulator) or cpu.
    #[arg(long, default_value = "sdaa", value_parser = ["sdaa", "cpu"])]
    pub device: String,
    /// The dtypes to check, comma-separated: float32, float16, bfloat16.
    #[arg(long, default_value = "float32", value_parser = parse_dtypes)]
    pub dtypes: String,
    /// Also check the gradient of every floating input that requires one (a fixed random
    /// cotangent, seeded, the same for both sides).
    #[arg(long)]
    pub backward: bool,
    /// The seed given to `cases` and the cotangents.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write the result (every row, the standard, the repro scripts) as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Where a failing case's standalone repro script goes.
    #[arg(long, value_name = "DIR", default_value = "op-check-repro")]
    pub repro_dir: PathBuf,
    /// The Python that runs the check (default: `python3` on PATH, the kit's `.venv` first).
    #[arg(long, value_name = "PYTHON", default_value = "python3")]
    pub python: String,
}

/// The dtypes `--dtypes` accepts.
pub const DTYPES: &[&str] = &["float32", "float16", "bfloat16"];

fn parse_dtypes(s: &str) -> Result<String, String> {
    let list: Vec<&str> = s
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    if list.is_empty() {
        return Err("no dtype given (use float32, float16, bfloat16)".into());
    }
    if let Some(bad) = list.iter().find(|d| !DTYPES.contains(d)) {
        return Err(format!(
            "unknown dtype `{bad}` (use float32, float16, bfloat16)"
        ));
    }
    Ok(list.join(","))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        OpCommand::Check(a) => check(a),
        OpCommand::New(a) => new::run(a),
    }
}

/// The kit's Python directory holding the harness, or an error saying what is missing.
fn harness_dir(kit: Option<&Kit>) -> anyhow::Result<PathBuf> {
    let kit = kit.context(
        "cannot find the kit (the repository this `modelzoo` was built in): set MODELZOO_ROOT \
         to it",
    )?;
    let dir = kit.root.join("python");
    anyhow::ensure!(
        dir.join("modelzoo_opcheck/__init__.py").is_file(),
        "the op-check harness is missing: {} holds no modelzoo_opcheck/__init__.py (set \
         MODELZOO_ROOT to the kit's repository)",
        dir.display()
    );
    Ok(dir)
}

fn check(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let kit = Kit::locate();
    let harness = harness_dir(kit.as_ref())?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let backend = SdaaBackend::detect(kit.as_ref());
    if a.device == "sdaa" {
        if let SdaaBackend::Emulator { .. } = backend {
            eprintln!("op check: sdaa runs on {}", backend.describe());
        }
    }
    let out = std::env::temp_dir().join(format!("modelzoo-op-check-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let mut cmd = Command::new(&a.python);
    cmd.args(["-m", "modelzoo_opcheck", "--ref", &a.reference])
        .args(["--impl", &a.implementation, "--inputs", &a.inputs])
        .args(["--device", &a.device, "--dtypes", &a.dtypes])
        .args(["--seed", &a.seed.to_string()])
        .arg("--repro-dir")
        .arg(&a.repro_dir)
        .arg("--out")
        .arg(&out);
    if a.backward {
        cmd.arg("--backward");
    }
    for (k, v) in command_env(&a.device, &[], kit.as_ref(), &backend) {
        cmd.env(k, v);
    }
    // MOD resolves from the current directory first, then the kit's harness, the inherited
    // PYTHONPATH and (without a card) the emulator's torch_sdaa.
    let emulator: Vec<PathBuf> = match &backend {
        SdaaBackend::Emulator {
            python: Some(p), ..
        } => vec![p.clone()],
        _ => vec![],
    };
    if let Some(pp) = python_path_with(&[cwd, harness], &emulator) {
        cmd.env("PYTHONPATH", pp);
    }
    if std::env::var_os("TORCH_SDAA_BANNER").is_none() {
        cmd.env("TORCH_SDAA_BANNER", "0");
    }
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "error: cannot run `{}` ({e}): give the Python that has torch with --python",
                a.python
            );
            return Ok(ExitCode::from(2));
        }
    };
    let text = std::fs::read_to_string(&out);
    let _ = std::fs::remove_file(&out);
    let result: Value = match text.ok().and_then(|t| serde_json::from_str(&t).ok()) {
        Some(v) => v,
        None => {
            eprintln!(
                "error: the op-check harness ({} -m modelzoo_opcheck) {} and wrote no result \
                 (its output is above)",
                a.python,
                match status.code() {
                    Some(c) => format!("exited with status {c}"),
                    None => "was killed by a signal".to_string(),
                }
            );
            return Ok(ExitCode::from(2));
        }
    };
    if let Some(err) = result.get("error").and_then(Value::as_str) {
        // The harness printed it on stderr already.
        tracing::info!("op check could not run: {err}");
        if let Some(path) = &a.json {
            write_json(path, &result)?;
        }
        return Ok(ExitCode::from(2));
    }
    print!("{}", table(&result));
    let pass = result.get("pass").and_then(Value::as_bool).unwrap_or(false);
    if let Some(path) = &a.json {
        write_json(path, &result)?;
    }
    Ok(if pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn write_json(path: &Path, v: &Value) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(v)?;
    text.push('\n');
    modelzoo_support::write_report(path, text.as_bytes(), &[])
        .with_context(|| format!("cannot write --json {}", path.display()))
}

fn num(v: Option<&Value>) -> String {
    match v.and_then(Value::as_f64) {
        None => "-".into(),
        Some(x) if x == 0.0 || (1e-3..1e4).contains(&x.abs()) => format!("{x:.6}"),
        Some(x) => format!("{x:.3e}"),
    }
}

/// The result as the console shows it: the standard, one row per compared tensor, the
/// reasons of the failing rows, the repro scripts and the verdict line.
pub fn table(r: &Value) -> String {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut out = String::new();
    if let Some(st) = r.get("standard") {
        let per = |k: &str| {
            DTYPES
                .iter()
                .map(|d| format!("{d} {}", num(st.get(k).and_then(|m| m.get(*d)))))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "standard (msprobe): cosine >= {}; |ref| below the small-value threshold ({}) judged by absolute error <= it, others by relative error <= ({}); else pass only within {} of the reference run on the CPU in the same dtype\n",
            st.get("cosine_min")
                .and_then(Value::as_f64)
                .map_or("-".into(), |c| c.to_string()),
            per("small_value_threshold"),
            per("rel_bound"),
            st.get("benchmark_ratio_limits")
                .and_then(Value::as_object)
                .map(|m| m
                    .iter()
                    .map(|(k, v)| format!("{k} ratio <= {}", v.as_f64().unwrap_or(0.0)))
                    .collect::<Vec<_>>()
                    .join(", "))
                .unwrap_or_default()
        ));
    }
    let header = [
        "case",
        "dtype",
        "layout",
        "tensor",
        "cosine",
        "max_abs",
        "max_rel",
        "small_err",
        "judged_by",
        "verdict",
    ];
    let rows: Vec<&Value> = r
        .get("rows")
        .and_then(Value::as_array)
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for row in &rows {
        cells.push(vec![
            s(row, "case"),
            s(row, "dtype"),
            s(row, "layout"),
            s(row, "tensor"),
            num(row.get("cosine")),
            num(row.get("max_abs")),
            num(row.get("max_rel")),
            row.get("small_value_errors")
                .and_then(Value::as_u64)
                .map_or("-".into(), |k| k.to_string()),
            s(row, "judged_by"),
            s(row, "verdict").to_uppercase(),
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for c in &cells {
        let line: Vec<String> = c
            .iter()
            .zip(&widths)
            .map(|(x, w)| format!("{x:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    let failing: Vec<&&Value> = rows
        .iter()
        .filter(|row| s(row, "verdict") != "pass")
        .collect();
    for row in &failing {
        out.push_str(&format!(
            "FAIL {} {} {} {}: {}\n",
            s(row, "case"),
            s(row, "dtype"),
            s(row, "layout"),
            s(row, "tensor"),
            s(row, "reason")
        ));
    }
    if let Some(repros) = r.get("repros").and_then(Value::as_array) {
        for p in repros {
            let inputs: Vec<String> = p
                .get("inputs")
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .map(|i| {
                            let shape: Vec<String> = i["shape"]
                                .as_array()
                                .map(|d| d.iter().map(|x| x.to_string()).collect())
                                .unwrap_or_default();
                            format!(
                                "{} {}[{}]{}",
                                s(i, "name"),
                                s(i, "dtype"),
                                shape.join(", "),
                                if i["requires_grad"] == true {
                                    " requires_grad"
                                } else {
                                    ""
                                }
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.push_str(&format!(
                "repro: {} (case `{}`, {}, seed {}{})\n",
                s(p, "path"),
                s(p, "case"),
                s(p, "dtype"),
                r.get("seed").and_then(Value::as_u64).unwrap_or(0),
                if inputs.is_empty() {
                    String::new()
                } else {
                    format!("; inputs {}", inputs.join(", "))
                }
            ));
        }
    }
    let pass = r.get("pass").and_then(Value::as_bool).unwrap_or(false);
    out.push_str(&format!(
        "{}: {} row(s), {} failing; {} vs {} on {}\n",
        if pass { "PASS" } else { "FAIL" },
        rows.len(),
        failing.len(),
        s(r, "impl"),
        s(r, "ref"),
        s(r, "device"),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_are_checked_and_normalised() {
        assert_eq!(
            parse_dtypes("float32, bfloat16").unwrap(),
            "float32,bfloat16"
        );
        assert!(parse_dtypes("float8").unwrap_err().contains("`float8`"));
        assert!(parse_dtypes(",").is_err());
    }

    #[test]
    fn the_table_lists_rows_reasons_repros_and_the_verdict() {
        let r = serde_json::json!({
            "impl": "ops:impl", "ref": "ops:ref", "device": "cpu", "seed": 3, "pass": false,
            "standard": {"cosine_min": 0.99,
                         "small_value_threshold": {"float32": 6.103515625e-05},
                         "rel_bound": {"float32": 0.00048828125},
                         "benchmark_ratio_limits": {"rmse": 2.0}},
            "rows": [
                {"case": "a", "dtype": "float32", "layout": "contiguous", "tensor": "out",
                 "cosine": 1.0, "max_abs": 1e-7, "max_rel": 1e-6, "small_value_errors": 0,
                 "judged_by": "threshold", "verdict": "pass", "reason": ""},
                {"case": "a", "dtype": "float32", "layout": "non-contiguous", "tensor": "grad:arg0",
                 "cosine": 0.5, "max_abs": 0.3, "max_rel": 2.0, "small_value_errors": 1,
                 "judged_by": "threshold", "verdict": "fail", "reason": "cosine 0.5 < 0.99"}
            ],
            "repros": [{"case": "a", "dtype": "float32", "path": "op-check-repro/repro_a_float32.py",
                        "inputs": [{"name": "arg0", "dtype": "float32", "shape": [4, 16],
                                    "requires_grad": true}]}]
        });
        let t = table(&r);
        assert!(t.contains("float32 6.104e-5"), "{t}");
        assert!(
            t.contains("FAIL a float32 non-contiguous grad:arg0: cosine 0.5 < 0.99"),
            "{t}"
        );
        assert!(
            t.contains("repro: op-check-repro/repro_a_float32.py (case `a`, float32, seed 3; inputs arg0 float32[4, 16] requires_grad)"),
            "{t}"
        );
        assert!(
            t.ends_with("FAIL: 2 row(s), 1 failing; ops:impl vs ops:ref on cpu\n"),
            "{t}"
        );
    }
}
