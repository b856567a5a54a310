//! `modelzoo compare` — compare a candidate (SDAA) training log against a baseline (CUDA) log.
//!
//! Exit codes: 0 the rule passes, 1 it fails (steps compared covering less than
//! --min-coverage of the longer run fail unless --allow-partial; with --noise-gate, a
//! candidate beyond the noise floor fails too), 2 unusable input (unreadable file, metric
//! absent, no common steps, a baseline that is 0 at every step, a noise run sharing no step,
//! report directory not writable).
//!
//! Several logs a side (`--baseline a.log b.log c.log --candidate …`, or quoted globs the tool
//! expands) judge the runs' final values with Welch's one-sided t-test (validator's
//! `compare_runs`); with one log a side the output says that the run-to-run noise is unknown.

use std::path::PathBuf;
use std::process::ExitCode;

use validator::compare::{self, Align, Options, Rule};
use validator::report;

/// Pass/fail rule.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum RuleArg {
    /// Adaptation guide: |relative error of the final value| ≤ --threshold.
    Rel1,
    /// ModelZoo loss.py: mean((c-b)/b) ≤ 0.05 or mean(c-b) ≤ 0.0002, signed, by position.
    ModelzooLoss,
}

/// Step pairing.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum AlignArg {
    /// By (epoch, iteration).
    Key,
    /// By position.
    Order,
}

/// Which way is better.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum GoalArg {
    /// Lower is better (losses).
    Minimize,
    /// Higher is better (accuracy, mAP).
    Maximize,
}

#[derive(clap::Args)]
pub struct Args {
    /// Baseline (CUDA) log(s): any format dllogger reads. Several runs (or a quoted glob,
    /// expanded here) judge the runs' final values with Welch's t-test (3 or more a side).
    #[arg(long, value_name = "LOG", num_args = 1.., required = true)]
    pub baseline: Vec<PathBuf>,
    /// Candidate (SDAA) log(s), as --baseline.
    #[arg(long, value_name = "LOG", num_args = 1.., required = true)]
    pub candidate: Vec<PathBuf>,
    /// Which way is better for the metric, for the test across runs: minimize (losses) or
    /// maximize (accuracy, mAP). Default: the baseline log's METADATA GOAL, else the metric's
    /// name.
    #[arg(long, value_enum, value_name = "GOAL")]
    pub goal: Option<GoalArg>,
    /// Metric to compare (`--loss-key` is the same flag, as in `modelzoo port`). Default:
    /// train.loss, or — in a log that has none — the first of train_loss, loss it has, else
    /// the named losses of one line (`Loss_D`, `Loss_G`: each compared, the verdict the worst);
    /// the output says which.
    #[arg(long, visible_alias = "loss-key", value_name = "NAME")]
    pub metric: Option<String>,
    /// Rank whose values are compared (records without a rank are rank 0).
    #[arg(long, default_value_t = 0)]
    pub rank: u32,
    /// How steps are paired.
    #[arg(long, value_enum, default_value = "key")]
    pub align: AlignArg,
    /// The final value is the mean of the last K paired steps.
    #[arg(long, value_name = "K", default_value_t = 10)]
    pub tail: usize,
    /// Pass/fail rule.
    #[arg(long, value_enum, default_value = "rel1")]
    pub rule: RuleArg,
    /// rel1 threshold: a fraction (0.01) or a percentage (1%).
    #[arg(long, default_value = "1%", value_parser = parse_threshold)]
    pub threshold: f64,
    /// Least share of the longer run's steps that must be compared: a fraction (0.95) or a
    /// percentage (95%). Below it the comparison fails (a run that stopped early).
    #[arg(long, value_name = "SHARE", default_value = "95%", value_parser = parse_coverage)]
    pub min_coverage: f64,
    /// Judge runs whose compared steps cover less than --min-coverage of the longer run on
    /// the steps compared, instead of failing them.
    #[arg(long)]
    pub allow_partial: bool,
    /// A second baseline run (same device and configuration, another seed): report whether the
    /// candidate deviates from the baseline more than this run does (the noise floor).
    #[arg(long, value_name = "LOG")]
    pub noise: Option<PathBuf>,
    /// Within run-to-run variation: candidate mean |c−b|/|b| ≤ F × noise mean |n−b|/|b|.
    #[arg(long, value_name = "F", default_value_t = compare::NOISE_FACTOR, value_parser = parse_factor)]
    pub noise_factor: f64,
    /// Fail (exit 1) when the candidate is not within run-to-run variation, as well as when the
    /// rule fails. Without it the noise verdict is reported only.
    #[arg(long, requires = "noise")]
    pub noise_gate: bool,
    /// Write report.md, report.html, curves.svg, rel_error.svg and summary.json here.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
    /// Print summary.json's content on stdout instead of the text summary.
    #[arg(long)]
    pub json: bool,
}

fn parse_threshold(s: &str) -> Result<f64, String> {
    let (num, scale) = match s.trim().strip_suffix('%') {
        Some(n) => (n, 0.01),
        None => (s.trim(), 1.0),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number or a percentage (e.g. 0.01 or 1%)"))?;
    let v = v * scale;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!(
            "threshold `{s}` must be a finite, non-negative number"
        ));
    }
    Ok(v)
}

fn parse_coverage(s: &str) -> Result<f64, String> {
    let v = parse_threshold(s).map_err(|_| {
        format!("`{s}` is not a share: give a fraction (0.95) or a percentage (95%)")
    })?;
    if v > 1.0 {
        return Err(format!(
            "--min-coverage `{s}` is above 100%: at most all of the longer run can be compared"
        ));
    }
    Ok(v)
}

fn parse_factor(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{s}` must be a finite number above 0 (e.g. 2)")),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.tail == 0 {
        anyhow::bail!("--tail must be at least 1");
    }
    let options = Options {
        metric_fallback: args.metric.is_none(),
        metric: args
            .metric
            .clone()
            .unwrap_or_else(|| compare::DEFAULT_METRIC.to_string()),
        rank: args.rank,
        align: match args.align {
            AlignArg::Key => Align::Key,
            AlignArg::Order => Align::Order,
        },
        tail: args.tail,
        rule: match args.rule {
            RuleArg::Rel1 => Rule::Rel1 {
                threshold: args.threshold,
            },
            RuleArg::ModelzooLoss => Rule::ModelzooLoss,
        },
        min_coverage: args.min_coverage,
        allow_partial: args.allow_partial,
        noise: args.noise.clone(),
        noise_factor: args.noise_factor,
        noise_gate: args.noise_gate,
    };
    let expand = |paths: &[PathBuf], role: &str| -> anyhow::Result<Vec<PathBuf>> {
        let mut all = Vec::new();
        for p in paths {
            all.extend(compare::expand_glob(p).map_err(|e| anyhow::anyhow!("--{role}: {e}"))?);
        }
        Ok(all)
    };
    let baselines = expand(&args.baseline, "baseline")?;
    let candidates = expand(&args.candidate, "candidate")?;
    let command = command_line();
    if baselines.len() > 1 || candidates.len() > 1 {
        return run_many(&args, &baselines, &candidates, &options, &command);
    }
    let cmp = compare::compare_files(&baselines[0], &candidates[0], &options)?;
    if args.json {
        print!("{}", report::summary_json(&cmp, &command));
    } else {
        print!("{}", report::text(&cmp));
    }
    if cmp.noise.is_none() {
        let note = format!(
            "note: one run a side — the run-to-run noise is unknown, so this verdict may be noise: {} runs a side settle it (modelzoo compare --baseline b1.log b2.log b3.log --candidate c1.log c2.log c3.log: Welch's t-test on their final values)",
            compare::MIN_RUNS
        );
        if args.json {
            eprintln!("{note}");
        } else {
            println!("{note}");
        }
    }
    if let Some(dir) = &args.report_dir {
        report::write_report(dir, &cmp, &command)?;
        tracing::info!("report written to {}", dir.display());
    }
    Ok(if cmp.verdict.pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Several runs a side: Welch's t-test on the final values decides (3 or more a side), the
/// per-pair rule beside it.
fn run_many(
    args: &Args,
    baselines: &[PathBuf],
    candidates: &[PathBuf],
    options: &Options,
    command: &str,
) -> anyhow::Result<ExitCode> {
    if args.noise.is_some() {
        anyhow::bail!(
            "--noise measures the noise from one extra baseline run for a single pair; with several runs a side the runs themselves measure it — give the noise run as one more --baseline instead"
        );
    }
    let goal = args.goal.map(|g| match g {
        GoalArg::Minimize => compare::Goal::Minimize,
        GoalArg::Maximize => compare::Goal::Maximize,
    });
    let runs = compare::compare_runs(baselines, candidates, options, goal)?;
    if args.json {
        print!("{}", compare::runs_json(&runs, command));
    } else {
        print!("{}", compare::runs_text(&runs));
    }
    if let Some(dir) = &args.report_dir {
        compare::write_runs_report(dir, &runs, command)?;
        tracing::info!("report written to {}", dir.display());
    }
    Ok(if runs.pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// This process's command line, shell-quoted where needed, for the report.
pub(crate) fn command_line() -> String {
    std::env::args()
        .enumerate()
        .map(|(i, a)| {
            let a = if i == 0 { "modelzoo".to_string() } else { a };
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:%,+@".contains(c))
            {
                a
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
