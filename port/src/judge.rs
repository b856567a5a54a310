//! The verdicts: the original judged usable (and reproducible, for the step rule), the port
//! run and judged against it, a crash mapped back to the original's line.

use super::runs::{backward_log, find_loss, read_autocast, read_inventory, run_side, OpPrecision};
use super::*;

/// The original: run (or read from `--baseline-log`), judged usable, the rule chosen, and for
/// a step-by-step verdict run a second time and checked reproducible. Ok(Err(verdict)): the
/// port cannot be judged, the candidate is not run.
pub(crate) fn judge_original(
    port: &mut Port,
    ctx: &Ctx,
    opts: &Options,
    cancel: &AtomicBool,
) -> Result<Result<Saved, Verdict>, PortError> {
    let mut saved = Saved {
        format: SAVED_FORMAT.into(),
        src: ctx.src.clone(),
        command: ctx.command.clone(),
        log: ctx.log.clone(),
        loss_key: ctx.loss_key.clone(),
        timeout_s: ctx.timeout.as_secs(),
        baseline_device: ctx.baseline_device,
        baseline_log: opts.baseline_log.clone(),
        migration: port.migration.clone(),
        baseline: Run::empty(),
        baseline_second: None,
        loss_note: None,
        backward: false,
        rule: RuleUsed {
            name: String::new(),
            why: String::new(),
        },
        series: Vec::new(),
        noise: BTreeMap::new(),
        routing: ctx.routing.clone(),
        seed: ctx.seed,
    };
    if let Some(log) = &opts.baseline_log {
        let log = log.canonicalize().unwrap_or_else(|_| log.clone());
        let mut run = Run::empty();
        run.device = "cuda (a log of a real CUDA run, --baseline-log)".into();
        run.dir = log.parent().map(Path::to_path_buf).unwrap_or_default();
        run.console = log.clone();
        run.outcome = "not run: read from --baseline-log".into();
        run.exit_code = Some(0);
        match find_loss(&run.dir, &log, None, ctx.loss_key.as_deref()) {
            Ok(found) => {
                run.loss_log = Some(found.path);
                run.loss_metrics = found.metrics;
                run.steps = found.values;
                run.eval = found.eval;
            }
            Err(why) => run.loss_error = Some(why),
        }
        port.baseline = run;
        if let Some(why) = port.baseline.loss_error.clone() {
            port.summary =
                format!("no loss in the --baseline-log file: {why}; the port was not run");
            return Ok(Err(Verdict::NoBaselineLoss));
        }
        saved.rule = RuleUsed {
            name: "rel1".into(),
            why: "the baseline is a log of a CUDA run (--baseline-log): other kernels (and TF32) differ from the CPU's at every step, so the port is judged by the ModelZoo's 1% rule on the final value".into(),
        };
    } else {
        let first = run_side(
            ctx,
            Side::Baseline,
            "baseline",
            OpPrecision::AsCalled,
            cancel,
        )?;
        port.baseline = first;
        if let Some(verdict) = judge_baseline_run(port, ctx, false) {
            return Ok(Err(verdict));
        }
        let autocast = read_autocast(&ctx.work.join("backward").join("baseline"));
        saved.rule = match (ctx.baseline_device, autocast) {
            (BaselineDevice::Cuda, _) => RuleUsed {
                name: "rel1".into(),
                why: "the original ran on CUDA: its kernels (and TF32) differ from the CPU kernels the emulator runs at every step, so the port is judged by the ModelZoo's 1% rule on the final value".into(),
            },
            (BaselineDevice::Cpu, true) => RuleUsed {
                name: "rel1".into(),
                why: "the original trains under autocast (AMP, as the shim recorded): fp16/bf16 kernels are not the same computation on both sides step for step, so the port is judged by the ModelZoo's 1% rule on the final value".into(),
            },
            (BaselineDevice::Cpu, false) if !ctx.routing.baseline.is_empty() => RuleUsed {
                name: "step-by-step".into(),
                why: "fp32 CPU baseline with routed custom ops (--op): the emulator runs the CPU's kernels, but the port runs another implementation of each routed op than the original, so the two agree to the op's rounding, which training amplifies step by step; the original ran twice, its second run with the routed ops computed in float64, to measure that noise".into(),
            },
            (BaselineDevice::Cpu, false) => RuleUsed {
                name: "step-by-step".into(),
                why: "fp32 CPU baseline: the emulator runs the CPU's kernels, so a faithful port matches its original at every step to float noise; the original ran twice to measure that noise".into(),
            },
        };
    }
    port.rule = Some(saved.rule.clone());
    // The series the port is judged against.
    let metrics = port.baseline.loss_metrics.clone();
    let Some(path) = port.baseline.loss_log.clone() else {
        unreachable_loss(port);
        return Ok(Err(Verdict::NoBaselineLoss));
    };
    for metric in &metrics {
        match steps::Series::read(&path, metric) {
            Ok(s) => saved.series.push(s),
            Err(why) => {
                port.summary =
                    format!("the original's losses cannot be read: {why}; the port was not run");
                return Ok(Err(Verdict::NoBaselineLoss));
            }
        }
    }
    if saved
        .series
        .iter()
        .all(|s| s.points.iter().all(|p| p.value == 0.0))
    {
        port.summary = format!(
            "the original's loss ({}) is 0 at every step: a loss that never moves cannot show whether the port computes the same (a cross-entropy over one class is always 0); log the loss training minimizes (pick it with --loss-key NAME) and port again; the port was not run",
            metrics
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(Err(Verdict::NoBaselineLoss));
    }
    // A loss that is NaN or infinite in the original says the original is broken there: the
    // port cannot be judged against it (a port that matched it would "pass" on NaN).
    let non_finite = saved.series.iter().find_map(|s| {
        let (i, p) = s
            .points
            .iter()
            .enumerate()
            .find(|(_, p)| !p.value.is_finite())?;
        Some((s.metric.clone(), steps::label(p, i), p.value))
    });
    if let Some((metric, at, value)) = non_finite {
        port.summary = format!(
            "the original's loss `{metric}` is {value} at {at}: a run whose loss is not finite cannot show whether the port computes the same; fix the original first (its loss must be finite at every step); the port was not run"
        );
        return Ok(Err(Verdict::NoBaselineLoss));
    }
    saved.backward = port.loss_note.is_some();
    saved.loss_note = port.loss_note.clone();
    if saved.rule.name == "step-by-step" {
        let second = run_side(
            ctx,
            Side::Baseline,
            "baseline-2",
            OpPrecision::Float64,
            cancel,
        )?;
        port.baseline_second = Some(second);
        if let Some(verdict) = judge_baseline_run(port, ctx, true) {
            return Ok(Err(verdict));
        }
        let second = port.baseline_second.as_ref().expect("it ran");
        for first in &saved.series {
            let path = second.loss_log.clone().unwrap_or_default();
            let other = match steps::Series::read(&path, &first.metric) {
                Ok(s) => s,
                Err(why) => {
                    port.summary = format!(
                        "the original is not reproducible: its second run did not log `{}` as the first did ({why}); seed it (torch.manual_seed / --seed), give the DataLoader a seeded generator or turn shuffling off, and port again",
                        first.metric
                    );
                    return Ok(Err(Verdict::NotReproducible));
                }
            };
            match steps::reproducibility(first, &other) {
                Ok(noise) => {
                    saved.noise.insert(first.metric.clone(), noise);
                }
                Err(why) => {
                    port.summary = format!(
                        "the original is not reproducible: {why}. Two runs of the same command must compute the same losses before a port can be judged step by step: seed it (torch.manual_seed(0), or its --seed option), give its DataLoader a seeded generator (generator=torch.Generator().manual_seed(0)) or turn shuffling off, and port again; the port was not run"
                    );
                    return Ok(Err(Verdict::NotReproducible));
                }
            }
        }
    }
    saved.baseline = port.baseline.clone();
    saved.baseline_second = port.baseline_second.clone();
    Ok(Ok(saved))
}

pub(crate) fn unreachable_loss(port: &mut Port) {
    port.summary = "the original ran, but no loss was found; the port was not run".into();
}

/// Copies and runs the candidate from the port directory, then judges it.
/// Runs the candidate when the original cannot be judged against: a port that crashes or runs
/// nothing on sdaa fails (exit 1) as it would otherwise; one that runs keeps `unjudged`, and the
/// summary says it ran and that its losses were not compared.
pub(crate) fn run_unjudged_candidate(
    port: &mut Port,
    ctx: &Ctx,
    unjudged: Verdict,
    scan: &migrate::Report,
    cancel: &AtomicBool,
) -> Result<Verdict, PortError> {
    let why = port.summary.replace("; the port was not run", "");
    run_candidate(port, ctx, cancel)?;
    if let Some(verdict) = judge_candidate_ran(port, Some(scan)) {
        return Ok(verdict);
    }
    let c = port.candidate.as_ref().expect("the candidate ran");
    port.summary = format!(
        "{why}. The port ran to the end on {} ({:.1} s); its losses were not compared",
        c.device, c.seconds
    );
    Ok(unjudged)
}

pub(crate) fn run_and_judge_candidate(
    port: &mut Port,
    ctx: &Ctx,
    saved: &Saved,
    scan: Option<&migrate::Report>,
    cancel: &AtomicBool,
) -> Result<Verdict, PortError> {
    run_candidate(port, ctx, cancel)?;
    Ok(judge_candidate(port, saved, scan))
}

/// Runs the port once (`candidate`) and reads the op inventory it wrote into `port`.
pub(crate) fn run_candidate(
    port: &mut Port,
    ctx: &Ctx,
    cancel: &AtomicBool,
) -> Result<(), PortError> {
    // Filesystem times can be coarser than the clock: a margin, on top of the fresh directory.
    let started = SystemTime::now() - Duration::from_secs(2);
    let candidate = run_side(
        ctx,
        Side::Candidate,
        "candidate",
        OpPrecision::AsCalled,
        cancel,
    )?;
    port.inventory = read_inventory(&ctx.work.join("inventory"), started);
    port.candidate = Some(candidate);
    Ok(())
}

/// The verdict when the original's run (`second`: its second run) cannot be judged against,
/// else None. A run that printed no loss is judged by the shim's backward records instead.
pub(crate) fn judge_baseline_run(port: &mut Port, ctx: &Ctx, second: bool) -> Option<Verdict> {
    let label = if second { "baseline-2" } else { "baseline" };
    let which = if second {
        "the original's second run"
    } else {
        "the original"
    };
    let b = if second {
        port.baseline_second.as_mut().expect("it ran")
    } else {
        &mut port.baseline
    };
    if b.outcome == "interrupted" {
        port.summary = format!("interrupted while {which} ran");
        return Some(Verdict::Interrupted);
    }
    if !b.ran_to_the_end() {
        let text = std::fs::read(&b.console)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let at = b.crash.as_ref().map_or(String::new(), |c| {
            format!(
                " at {}:{} (`{}`): {}",
                ctx.src.join(&c.file).display(),
                c.crash.frame.line,
                c.crash.frame.code.as_deref().unwrap_or(""),
                c.crash.error
            )
        });
        if ctx.baseline_device == BaselineDevice::Cpu {
            let shim = ctx.work.join("shim").join("sitecustomize.py");
            if let Some(error) = trace::kit_failure(&text, &shim) {
                let script = b.crash.as_ref().map_or(
                    " (no frame of the project's code in the traceback)".to_string(),
                    |c| {
                        format!(
                            ", called from {}:{} (`{}`)",
                            ctx.src.join(&c.file).display(),
                            c.crash.frame.line,
                            c.crash.frame.code.as_deref().unwrap_or("")
                        )
                    },
                );
                port.summary = format!(
                    "the kit's CPU baseline failed, not the original ({}): {error}{script}. The shim that runs CUDA code on the CPU (python/port/sitecustomize.py) cannot map this call; get a baseline otherwise: run port on a GPU with --baseline-device cuda, or give the log of a real CUDA run of the same command with --baseline-log FILE; the port was not run",
                    b.outcome
                );
                return Some(Verdict::KitBaselineFailed);
            }
        }
        let missing = b
            .crash
            .as_ref()
            .and_then(|c| ctx.routing.missing_extension(&c.crash.error));
        if let Some(extension) = missing {
            let wrappers: Vec<String> = ctx
                .routing
                .unrouted
                .iter()
                .map(|(w, twin)| match twin {
                    Some(t) => format!("{w} (its pure-PyTorch twin: {t})"),
                    None => w.clone(),
                })
                .collect();
            port.summary = format!(
                "{which} needs the project's own extension {extension}, which is not built on this machine ({}){at}: that is not the original being broken. Route the torch.autograd.Function that calls it to an implementation that runs here, with --op CLASS=module:function for the port and --baseline-op CLASS=module:function for the original (its twin by default){}; or run port where the extension is built; the port was not run",
                b.outcome,
                if wrappers.is_empty() {
                    String::new()
                } else {
                    format!(" — the project's wrappers: {}", wrappers.join(", "))
                }
            );
            return Some(Verdict::ExtensionNotBuilt);
        }
        port.summary = format!(
            "{which} does not run ({}){at}: the original is broken, not the port — fix it first; the port was not run",
            b.outcome
        );
        return Some(Verdict::BaselineFailed);
    }
    if let Some(why) = b.loss_error.clone() {
        match backward_log(&ctx.work, label) {
            Some((path, values)) if values > 0 => {
                b.loss_log = Some(path);
                b.loss_metrics = vec![BACKWARD_METRIC.to_string()];
                b.steps = values;
                b.loss_error = None;
                port.loss_note = Some(format!(
                    "the script prints no loss ({why}), so the losses judged are the ones backward() saw, recorded by the port's shim (`{BACKWARD_METRIC}`, one value per backward call)"
                ));
            }
            _ => {
                port.summary = format!("{which} ran, but {why}; the port was not run");
                return Some(Verdict::NoBaselineLoss);
            }
        }
    }
    if second {
        let first = port.baseline.loss_metrics.clone();
        let b = port.baseline_second.as_ref().expect("it ran");
        if b.loss_metrics != first {
            port.summary = format!(
                "the original is not reproducible: its first run logged {:?}, its second {:?}; port again once two runs log the same",
                first, b.loss_metrics
            );
            return Some(Verdict::NotReproducible);
        }
    }
    None
}

/// The verdicts that need no losses: interrupted, crashed, nothing on sdaa (the op inventory of
/// this run is the only proof). None: it ran to the end on sdaa.
pub(crate) fn judge_candidate_ran(
    port: &mut Port,
    scan: Option<&migrate::Report>,
) -> Option<Verdict> {
    let c = port.candidate.as_mut().expect("the candidate ran");
    if c.outcome == "interrupted" {
        port.summary = "interrupted while the port ran".into();
        return Some(Verdict::Interrupted);
    }
    if !c.ran_to_the_end() {
        if let (Some(site), Some(scan)) = (c.crash.as_mut(), scan) {
            map_to_original(site, scan, &port.src);
        }
        let at = c.crash.as_ref().map_or(
            " (no traceback through the project's code in its output)".to_string(),
            |s| {
                format!(
                    " at {}:{} (`{}`){}: {}",
                    s.file.display(),
                    s.crash.frame.line,
                    s.crash.frame.code.as_deref().unwrap_or(""),
                    s.original_line.map_or(String::new(), |l| format!(
                        ", line {l} of the original{}",
                        s.original_code
                            .as_ref()
                            .map_or(String::new(), |code| format!(" (`{code}`)"))
                    )),
                    s.crash.error
                )
            },
        );
        port.summary = format!(
            "the port crashed on sdaa ({}){at}; the original ran to the end",
            c.outcome
        );
        return Some(Verdict::Crash);
    }
    // Proof that it ran on sdaa: the emulator's op inventory of this run, never console text.
    match &port.inventory {
        Some(inv) if inv.device_ops > 0 => c.device = "sdaa (emulator)".into(),
        Some(_) => {
            c.device = "sdaa (emulator: no op ran on the device)".into();
            port.summary = "the port ran, but nothing ran on sdaa: the emulator's op inventory of this run lists no op on the device. Does the training script import torch_sdaa and move the model and data to the device? See the findings".into();
            return Some(Verdict::NotOnSdaa);
        }
        None => {
            c.device = "sdaa (no record of the device runtime)".into();
            let said = c.banner.as_ref().map_or(String::new(), |b| {
                format!(" (its console printed `{b}`, which is text, not a record of the device)")
            });
            port.summary = format!(
                "the port ran, but nothing shows it ran on sdaa: the device runtime wrote no record in this run (the emulator's op inventory){said}. Does the training script import torch_sdaa and move the model and data to the device? On a real card the kit cannot read such a record yet. See the findings"
            );
            return Some(Verdict::NotOnSdaa);
        }
    }
    None
}

/// The verdict once the candidate ran.
pub(crate) fn judge_candidate(
    port: &mut Port,
    saved: &Saved,
    scan: Option<&migrate::Report>,
) -> Verdict {
    if let Some(verdict) = judge_candidate_ran(port, scan) {
        return verdict;
    }
    let work = port.out.join(WORK_DIR);
    let c = port.candidate.as_mut().expect("the candidate ran");
    // The candidate's losses, from the same kind of source as the original's.
    if saved.backward {
        match backward_log(&work, "candidate") {
            Some((path, values)) if values > 0 => {
                c.loss_log = Some(path);
                c.loss_metrics = vec![BACKWARD_METRIC.to_string()];
                c.steps = values;
                c.loss_error = None;
            }
            _ => {
                port.summary = format!(
                    "the port ran on sdaa, but the shim recorded no backward() loss in it (`{BACKWARD_METRIC}`, the original's losses)"
                );
                return Verdict::NoCandidateLoss;
            }
        }
    }
    let Some(c_log) = c.loss_log.clone() else {
        port.summary = format!(
            "the port ran on sdaa, but {}",
            c.loss_error
                .clone()
                .unwrap_or_else(|| "logged no loss".into())
        );
        return Verdict::NoCandidateLoss;
    };
    let wanted: Vec<String> = saved.series.iter().map(|s| s.metric.clone()).collect();
    if let Some(missing) = wanted.iter().find(|m| !c.loss_metrics.contains(m)) {
        port.summary = format!(
            "the original logged `{missing}`, the port {}: the two runs do not log the same loss",
            if c.loss_metrics.is_empty() {
                "nothing".to_string()
            } else {
                c.loss_metrics
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        return Verdict::NoCandidateLoss;
    }
    let device = c.device.clone();
    let b_log = saved.baseline.loss_log.clone().unwrap_or_default();
    let rule = saved.rule.clone();
    let step_rule = rule.name == "step-by-step";
    let mut texts = Vec::new();
    let mut first_rel1_fail: Option<(String, String)> = None;
    let mut verdict = Verdict::Pass;
    let mut reason = String::new();
    let mut pass_reason = String::new();
    let mut rel1_error = None;
    for base in &saved.series {
        let metric = &base.metric;
        // The ModelZoo's 1% rule, the acceptance figure in every case.
        let options = compare::Options {
            metric: metric.clone(),
            metric_fallback: false,
            ..compare::Options::default()
        };
        let cmp = compare::read_series(&b_log, "baseline", metric, 0)
            .and_then(|b| Ok((b, compare::read_series(&c_log, "candidate", metric, 0)?)))
            .and_then(|(b, c)| compare::compare(b, c, &options));
        match cmp {
            Ok(cmp) => {
                texts.push(validator::report::text(&cmp));
                if !cmp.verdict.pass && first_rel1_fail.is_none() {
                    first_rel1_fail = Some((metric.clone(), cmp.verdict.reason.clone()));
                    port.compare = Some(cmp);
                } else {
                    if pass_reason.is_empty() {
                        pass_reason = cmp.verdict.reason.clone();
                    }
                    if port.compare.is_none() {
                        port.compare = Some(cmp);
                    }
                }
            }
            Err(e) if !step_rule => {
                port.summary = format!(
                    "the port ran to the end on {device}, but its `{metric}` cannot be compared with the original's by the 1% rule: {e}"
                );
                return Verdict::StepsDiffer;
            }
            Err(e) => {
                let why = format!("`{metric}`: the 1% rule cannot be applied: {e}");
                rel1_error.get_or_insert_with(|| why.clone());
                texts.push(why);
            }
        }
        if step_rule {
            let cand = match steps::Series::read(&c_log, metric) {
                Ok(s) => s,
                Err(why) => {
                    port.summary = format!("the port ran on sdaa, but {why}");
                    return Verdict::NoCandidateLoss;
                }
            };
            let noise = saved.noise.get(metric).copied().unwrap_or(0.0);
            let judged = steps::judge(base, &cand, noise);
            match &judged.outcome {
                steps::Outcome::Fail(f) if verdict != Verdict::Drift => {
                    verdict = Verdict::Drift;
                    reason = format!(
                        "its `{metric}` left the original's at {}: original {}, port {}, difference {:.3e} > tolerance {:.3e} (step-by-step rule: max of the original's run-to-run noise {:.3e}, the printed precision {:.1e} and {} float32 ulps)",
                        f.step, f.baseline, f.candidate, f.difference, f.tolerance, judged.noise, judged.print_unit, steps::FLOOR_ULPS
                    );
                }
                steps::Outcome::StepsDiffer { why } if verdict == Verdict::Pass => {
                    verdict = Verdict::StepsDiffer;
                    reason = why.clone();
                }
                _ => {}
            }
            port.steps.push(judged);
        }
    }
    port.compare_text = Some(texts.join("\n\n"));
    match verdict {
        Verdict::Drift => {
            port.summary = format!(
                "the port ran to the end on {device}, but {reason} — next: `modelzoo diff` of one step's dumps names the op (docs/diff.md)"
            );
            return Verdict::Drift;
        }
        Verdict::StepsDiffer => {
            port.summary = format!(
                "the port ran to the end on {device}, but its losses cannot be compared step by step with the original's: {reason}"
            );
            return Verdict::StepsDiffer;
        }
        _ => {}
    }
    if let Some((metric, why)) = first_rel1_fail {
        port.summary = format!(
            "the port ran to the end on {device}, but its `{metric}` drifted from the original's by the ModelZoo's 1% rule: {why} — next: `modelzoo diff` of one step's dumps names the op (docs/diff.md)"
        );
        return Verdict::Drift;
    }
    if pass_reason.is_empty() {
        pass_reason = rel1_error.unwrap_or_default();
    }
    port.summary = if step_rule {
        let steps: usize = port.steps.iter().map(|j| j.steps).max().unwrap_or(0);
        format!(
            "the port ran to the end on {device} and matches the original at every step ({steps} compared, step-by-step rule); 1% rule on the final value: {pass_reason}"
        )
    } else {
        format!(
            "the port ran to the end on {device} and matches the original by the ModelZoo's 1% rule: {pass_reason}"
        )
    };
    Verdict::Pass
}

/// Where the crashing line of the port came from in the original: the migration's line map
/// of that file, read backwards.
pub(crate) fn map_to_original(site: &mut CrashSite, scan: &migrate::Report, src: &Path) {
    let line = site.crash.frame.line;
    let original = match scan.changes.iter().find(|c| c.path == site.file) {
        Some(change) => change
            .line_map
            .iter()
            .position(|&new| new == line)
            .map(|old| old + 1),
        None => Some(line),
    };
    site.original_line = original;
    site.original_code = original.and_then(|l| {
        std::fs::read_to_string(src.join(&site.file))
            .ok()?
            .lines()
            .nth(l - 1)
            .map(|s| s.trim().to_string())
    });
}
