//! `modelzoo-bench`: FlagPerf's standard cases over the zoo's `run_<model>` binaries
//! (`modelzoo bench`).
//!
//! A case key `model:framework:hardware:nnodes:nproc:repeat` names a case config
//! ([`config`]: `_base.yaml` < vendor `config_<hw>x<n>x<p>.yaml` < test_conf, only
//! `mutable_params` overridable). Each of its `repeat` rounds runs the model's own command on
//! every node ([`round`]), and its figures — from the bench's clock and the driver events the
//! run logs (`modelzoo_engine::driver`) — become `finished_info.json` ([`finished`]). The
//! results over cases × rounds go to results.md / .json / .csv and p_whole.svg ([`results`]).
//!
//! Every case is resolved before anything runs: bad input (unknown model or hardware, a
//! malformed key, a non-mutable override, a missing dataset) is [`BenchError`], exit 2. A round
//! that crashes is recorded with its log tail and the other rounds still run.

pub mod config;
pub mod finished;
pub mod key;
pub mod results;
pub mod round;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_yaml::Value;

use crate::config::{parse_override, CaseStore, Resolved, TestConf};
use crate::key::CaseKey;
use crate::results::{CaseResult, Results};
use crate::round::{RoundOptions, RoundResult};

/// Input the bench cannot run with (exit 2); nothing has run when it is returned.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("case key `{key}`: {why}")]
    Key { key: String, why: String },
    #[error("unknown {what} `{name}`; known: {}", valid.join(", "))]
    Unknown {
        what: &'static str,
        name: String,
        valid: Vec<String>,
    },
    #[error("{}: {why}", path.display())]
    Config { path: PathBuf, why: String },
    #[error("no vendor config {}; that folder ships: {}", path.display(), if shipped.is_empty() { "nothing".to_string() } else { shipped.join(", ") })]
    NoVendorConfig { path: PathBuf, shipped: Vec<String> },
    #[error("{layer} overrides `{key}`, which is not in the case's mutable_params ({}); a vendor config or test_conf may override only: {}", base.display(), mutable.join(", "))]
    NotMutable {
        key: String,
        layer: String,
        base: PathBuf,
        mutable: Vec<String>,
    },
    #[error("case {case} needs a dataset and none was given: put its path as the case's value in --test-conf, or pass -o data_dir=PATH (its vendor config {} sets none)", vendor_config.display())]
    NoDataset {
        case: String,
        vendor_config: PathBuf,
    },
    #[error("{0}")]
    Usage(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl BenchError {
    /// Every `BenchError` is bad input: exit 2.
    pub fn exit_code(&self) -> u8 {
        2
    }
}

/// What `modelzoo bench` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--cases` keys.
    pub cases: Vec<String>,
    /// `--test-conf` file.
    pub test_conf: Option<PathBuf>,
    /// `-o key=value`, the test_conf layer (over the file's `overrides`).
    pub overrides: Vec<String>,
    pub work_dir: PathBuf,
    /// Where `hardware.yaml`, `benchmarks/` and the vendor folders are.
    pub cases_dir: PathBuf,
    /// Working directory of the runs (config paths such as `config:` are relative to it).
    pub cwd: PathBuf,
    /// Directories searched first for the `run_<model>` binaries.
    pub path_prefix: Vec<PathBuf>,
    pub timeout: Duration,
    /// Print the resolved configs and commands; run nothing.
    pub dry_run: bool,
}

/// Resolve every case of the request (keys from `--cases` or the test_conf) with its layers.
pub fn plan(opts: &Options) -> Result<Vec<Resolved>, BenchError> {
    let store = CaseStore::open(&opts.cases_dir)?;
    let conf = match &opts.test_conf {
        Some(p) => TestConf::load(p)?,
        None => TestConf::default(),
    };
    let mut entries: Vec<(String, Option<String>)> = conf.cases.clone().into_iter().collect();
    entries.extend(
        opts.cases
            .iter()
            .filter(|k| !k.trim().is_empty())
            .map(|k| (k.trim().to_string(), None)),
    );
    if entries.is_empty() {
        return Err(BenchError::Usage(
            "no cases: pass --cases KEY[,KEY...] (e.g. resnet:rust-tch:cpu:1:1:2) or --test-conf FILE".into(),
        ));
    }
    let mut overrides: Vec<(String, Value)> = conf.overrides.into_iter().collect();
    for o in &opts.overrides {
        overrides.push(parse_override(o)?);
    }
    let mut plan = Vec::new();
    for (text, dataset) in entries {
        let key: CaseKey = text.parse()?;
        if let Some(twin) = plan
            .iter()
            .find(|c: &&Resolved| c.key.case_name() == key.case_name())
        {
            // Both would run in (and overwrite) the same folder.
            return Err(BenchError::Usage(format!(
                "case {} is listed twice ({key} and {}); list it once with the repeat count you want",
                key.case_name(),
                twin.key
            )));
        }
        let mut layer = overrides.clone();
        if let Some(d) = dataset.filter(|d| !d.trim().is_empty()) {
            layer.insert(0, ("data_dir".to_string(), Value::String(d)));
        }
        let case = store.resolve(&key, &layer)?;
        round::check_dataset(&case)?;
        plan.push(case);
    }
    Ok(plan)
}

/// What the dry run prints: each case's parameters (with their layer) and node commands,
/// shell-quoted so they can be pasted, writing where round 1 under `work_dir` would.
pub fn describe(plan: &[Resolved], work_dir: &Path) -> String {
    let mut out = String::new();
    for case in plan {
        out.push_str(&format!(
            "# {} ({} round(s)); base {}, vendor {}\n",
            case.key,
            case.key.repeat,
            case.base_path.display(),
            case.vendor_path.display()
        ));
        for (k, (v, layer)) in &case.params {
            let v = config::scalar_text(v).unwrap_or_else(|| "null".into());
            out.push_str(&format!("#   {k} = {v}  ({layer:?})\n"));
        }
        for node in 0..case.key.nnodes {
            let out_dir = std::path::absolute(work_dir)
                .unwrap_or_else(|_| work_dir.to_path_buf())
                .join(case.key.dir_name())
                .join("round1/output");
            let argv = round::command(case, &out_dir, node, 29500);
            out.push_str(&round::shell_line(&argv));
            out.push('\n');
        }
    }
    out
}

/// How the whole bench ended.
pub struct Outcome {
    pub cases: Vec<CaseResult>,
    pub written: Vec<PathBuf>,
    pub interrupted: bool,
}

impl Outcome {
    /// 0 every round succeeded, 1 a round failed, 130 interrupted.
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            130
        } else if self.cases.iter().any(|c| c.failed_rounds() > 0) {
            1
        } else {
            0
        }
    }
}

fn progress(total: u64) -> ProgressBar {
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{bar:30} {pos}/{len} rounds {elapsed_precise} {msg}")
    {
        bar.set_style(style);
    }
    bar
}

/// Run every round of `plan` and write the results into the work dir.
pub fn run(
    plan: &[Resolved],
    opts: &Options,
    command: &str,
    cancel: &AtomicBool,
) -> Result<Outcome, BenchError> {
    let started = Instant::now();
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BenchError::Io { path, source }
    };
    std::fs::create_dir_all(&opts.work_dir).map_err(io(&opts.work_dir))?;
    let total: usize = plan.iter().map(|c| c.key.repeat).sum();
    let bar = progress(total as u64);
    let round_opts = RoundOptions {
        path_prefix: opts.path_prefix.clone(),
        cwd: opts.cwd.clone(),
        timeout: opts.timeout,
        cancel,
    };
    let mut cases = Vec::new();
    'cases: for case in plan {
        let case_dir = opts.work_dir.join(case.key.dir_name());
        let mut rounds: Vec<RoundResult> = Vec::new();
        for r in 1..=case.key.repeat {
            if cancel.load(Ordering::SeqCst) {
                break 'cases;
            }
            bar.set_message(format!("{} round {r}", case.key.case_name()));
            let dir = case_dir.join(format!("round{r}"));
            let result = round::run_round(case, r, &dir, &round_opts);
            match (&result.info, &result.error) {
                (Some(i), _) => {
                    tracing::info!(
                        "{} round {r}: p_whole {:.2}",
                        case.key.case_name(),
                        i.p_whole
                    );
                }
                (None, why) => {
                    eprintln!(
                        "modelzoo bench: {} round {r} failed: {}",
                        case.key.case_name(),
                        why.as_deref().unwrap_or("unknown")
                    );
                    let text = serde_json::to_string_pretty(&result).unwrap_or_default();
                    let _ = validator::report::write_atomic(&dir, "failure.json", text.as_bytes());
                }
            }
            rounds.push(result);
            bar.inc(1);
        }
        cases.push(CaseResult::new(
            &case.key,
            &case.hardware.vendor,
            &case.base.items,
            rounds,
        ));
    }
    bar.finish_and_clear();
    results::compare_cases(&mut cases);
    let run_secs: f64 = cases
        .iter()
        .flat_map(|c| &c.rounds)
        .map(|r| r.run_secs)
        .sum();
    // Everything but the runs themselves: resolving, clearing folders, reading logs, writing
    // finished_info (the results files written next are not counted).
    let overhead = (started.elapsed().as_secs_f64() - run_secs).max(0.0);
    let res = Results {
        command,
        cases: &cases,
        bench_overhead_secs: overhead,
        bench_overhead_pct: if run_secs > 0.0 {
            overhead / run_secs * 100.0
        } else {
            0.0
        },
    };
    let written = results::write_all(&opts.work_dir, &res).map_err(io(&opts.work_dir))?;
    Ok(Outcome {
        interrupted: cancel.load(Ordering::SeqCst),
        cases,
        written,
    })
}
