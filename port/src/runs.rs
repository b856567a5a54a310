//! One run of the command: its fresh copy and environment (the shim, the emulator, the op
//! inventory), its console, where its losses are, and what the device runtime recorded.

use super::*;

pub(crate) fn fresh_dir(dir: &Path) -> Result<(), PortError> {
    let io = |e: std::io::Error| PortError::Input {
        path: dir.to_path_buf(),
        message: format!("cannot make it afresh: {e}"),
    };
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {
            if std::fs::remove_dir_all(dir).is_err() {
                // A copied read-only directory: make the copies' directories writable first.
                use std::os::unix::fs::PermissionsExt;
                for entry in walkdir::WalkDir::new(dir)
                    .follow_links(false)
                    .into_iter()
                    .flatten()
                {
                    if entry.file_type().is_dir() {
                        let _ = std::fs::set_permissions(
                            entry.path(),
                            std::fs::Permissions::from_mode(0o755),
                        );
                    }
                }
                std::fs::remove_dir_all(dir).map_err(io)?;
            }
        }
        Ok(_) => std::fs::remove_file(dir).map_err(io)?,
        Err(_) => {}
    }
    std::fs::create_dir_all(dir).map_err(io)
}

pub(crate) fn write_shim(work: &Path) -> Result<(), PortError> {
    let shim = work.join("shim");
    std::fs::create_dir_all(&shim)
        .and_then(|()| {
            modelzoo_support::write_atomic(&shim.join("sitecustomize.py"), CPU_SHIM.as_bytes())
        })
        .map_err(|e| PortError::Input {
            path: shim.clone(),
            message: format!("cannot write the port's shim: {e}"),
        })
}

/// Whether the shim recorded autocast in the original's run (rank 0).
pub(crate) fn read_autocast(dir: &Path) -> bool {
    std::fs::read(dir.join("meta.rank0.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["autocast"].as_bool())
        .unwrap_or(false)
}

/// The one call into the loss finder.
pub(crate) fn find_loss(
    dir: &Path,
    console: &Path,
    log: Option<&Path>,
    key: Option<&str>,
) -> Result<FoundLoss, String> {
    losses::find(dir, console, log, key).map(|f| FoundLoss {
        path: f.path,
        metrics: f.metrics,
        values: f.values,
    })
}

/// Runs the command once, in a fresh copy under the work directory: the original's copy is
/// made from SRC, the candidate's from the port directory. Its output goes to
/// `<work>/<label>.log`.
pub(crate) fn run_side(
    ctx: &Ctx,
    side: Side,
    label: &str,
    cancel: &AtomicBool,
) -> Result<Run, PortError> {
    let device = match (side, ctx.baseline_device) {
        (Side::Baseline, BaselineDevice::Cuda) => "cuda".to_string(),
        (Side::Baseline, BaselineDevice::Cpu) => {
            "cpu (the original's CUDA calls mapped to the CPU by the port's shim)".to_string()
        }
        (Side::Candidate, _) => "sdaa".to_string(),
    };
    // The copy: runs/<label>/<name of SRC>/, beside links to SRC's siblings.
    let runs = ctx.work.join("runs").join(label);
    fresh_dir(&runs)?;
    let name = ctx
        .src
        .file_name()
        .map_or_else(|| OsString::from("project"), |n| n.to_os_string());
    let dir = runs.join(&name);
    std::fs::create_dir(&dir).map_err(|e| PortError::Copy {
        path: dir.clone(),
        message: e.to_string(),
    })?;
    match side {
        Side::Baseline => copy::copy_tree(&ctx.src, &dir, &[])?,
        Side::Candidate => copy::copy_tree(&ctx.out, &dir, &[&ctx.src])?,
    };
    copy::link_parent_entries(&ctx.src, &ctx.out, &runs)?;

    let console = ctx.work.join(format!("{label}.log"));
    let _ = std::fs::remove_file(&console);
    let backward = ctx.work.join("backward").join(label);
    fresh_dir(&backward)?;
    let shim = ctx.work.join("shim");
    let mut env: Vec<(&str, OsString)> = vec![
        ("PYTHONUNBUFFERED", "1".into()),
        ("MODELZOO_PORT_BACKWARD_DIR", backward.into_os_string()),
    ];
    let mut remove: Vec<&str> = vec!["MODELZOO_PORT_CPU_BASELINE"];
    let kit_bin: Vec<PathBuf> = ctx.kit.iter().filter_map(Kit::venv_bin).collect();
    let emulator: Vec<PathBuf> = ctx.kit.iter().filter_map(Kit::emulator_python).collect();
    // The shim records backward()'s losses on every side; it maps CUDA only on a CPU baseline.
    let first = vec![shim];
    let mut fault_injection = None;
    match side {
        Side::Baseline if ctx.baseline_device == BaselineDevice::Cpu => {
            env.push(("MODELZOO_PORT_CPU_BASELINE", "1".into()));
            remove.clear();
            env.push(("CUDA_VISIBLE_DEVICES", "".into()));
        }
        Side::Baseline => {}
        Side::Candidate => {
            // The port must not reach a GPU by a path the migration missed.
            env.push(("CUDA_VISIBLE_DEVICES", "".into()));
            // As many emulated devices as the CPU baseline reports (torchrun's local world
            // size, else one), so a DataParallel model splits its batch alike on both sides.
            if ctx.baseline_device == BaselineDevice::Cpu
                && std::env::var_os("SDAA_EMULATOR_DEVICES").is_none()
            {
                env.push(("SDAA_EMULATOR_DEVICES", "local".into()));
            }
            let inventory = ctx.work.join("inventory");
            fresh_dir(&inventory)?;
            env.push(("SDAA_EMULATOR_OP_INVENTORY", inventory.into_os_string()));
            fault_injection = std::env::var("SDAA_EMU_PERTURB")
                .ok()
                .filter(|v| !v.trim().is_empty());
        }
    }
    if let Some(pp) = python_path_with(&first, &emulator) {
        env.push(("PYTHONPATH", pp));
    }
    let mut command = Command::new(&ctx.command[0]);
    command.args(&ctx.command[1..]).current_dir(&dir);
    if let Some(path) = process::prefixed_path(&kit_bin) {
        command.env("PATH", path);
    }
    for k in remove {
        command.env_remove(k);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    tracing::info!(side = label, dir = %dir.display(), "running {:?}", ctx.command);
    eprintln!("port: running the {label} on {device} in {}", dir.display());
    let start = Instant::now();
    let outcome = process::run(Job {
        command,
        timeout: ctx.timeout,
        console: &console,
        kill_grace: Duration::from_secs(10),
        cancel,
    });
    let seconds = start.elapsed().as_secs_f64();
    let (outcome_text, exit_code) = match &outcome {
        RunOutcome::Exited { code } => (format!("exit {code}"), Some(*code)),
        RunOutcome::Signalled { signal } => (format!("killed by signal {signal}"), None),
        RunOutcome::TimedOut => (
            format!(
                "timed out after {} s (stopped with everything it started)",
                ctx.timeout.as_secs()
            ),
            None,
        ),
        RunOutcome::Interrupted => ("interrupted".to_string(), None),
        RunOutcome::SpawnFailed(e) => (format!("could not start `{}`: {e}", ctx.command[0]), None),
    };
    let text = std::fs::read(&console)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let tail: Vec<String> = {
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..]
            .iter()
            .map(|l| l.to_string())
            .collect()
    };
    let mut run = Run {
        device,
        dir: dir.clone(),
        console: console.clone(),
        outcome: outcome_text,
        exit_code,
        seconds,
        loss_log: None,
        loss_metrics: Vec::new(),
        steps: 0,
        loss_error: None,
        tail,
        crash: None,
        banner: (side == Side::Candidate).then(|| banner(&text)).flatten(),
        fault_injection,
    };
    if outcome == RunOutcome::Interrupted {
        return Ok(run);
    }
    match find_loss(&dir, &console, ctx.log.as_deref(), ctx.loss_key.as_deref()) {
        Ok(found) => {
            run.loss_log = Some(found.path);
            run.loss_metrics = found.metrics;
            run.steps = found.values;
        }
        Err(why) => run.loss_error = Some(why),
    }
    if !run.ran_to_the_end() {
        run.crash = trace::user_crash(&text, &dir).map(|crash| {
            let file = crash
                .frame
                .file
                .strip_prefix(&dir)
                .unwrap_or(&crash.frame.file)
                .to_path_buf();
            CrashSite {
                crash,
                file,
                original_line: None,
                original_code: None,
            }
        });
    }
    Ok(run)
}

/// The shim's record of every backward() loss of a run (rank 0), when it wrote one.
pub(crate) fn backward_log(work: &Path, label: &str) -> Option<(PathBuf, usize)> {
    let path = work
        .join("backward")
        .join(label)
        .join("backward.rank0.jsonl");
    let series = steps::Series::read(&path, BACKWARD_METRIC).ok()?;
    Some((path, series.points.len()))
}

/// A `Torch-SDAA` version row in the console: what the banner said (shown as such, never
/// proof that anything ran on the device).
pub(crate) fn banner(output: &str) -> Option<String> {
    output
        .lines()
        .find(|l| l.trim_start().starts_with("Torch-SDAA"))
        .map(|l| l.trim().to_string())
}

/// The emulator's op inventory of rank 0, when the port ran on the emulator and it was
/// written after `started` (a record of this run, not an older one).
pub(crate) fn read_inventory(dir: &Path, started: SystemTime) -> Option<Inventory> {
    let file = dir.join("op_inventory.rank0.json");
    let meta = std::fs::metadata(&file).ok()?;
    if !meta.is_file() || meta.modified().ok()? < started {
        return None;
    }
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).ok()?).ok()?;
    let list = |v: &serde_json::Value| v.as_array().cloned().unwrap_or_default();
    let device_ops = list(&json["device_ops"]);
    let calls = device_ops
        .iter()
        .filter_map(|o| o["count"].as_u64())
        .sum::<u64>();
    let fp64_device = list(&json["fp64"]["device"])
        .iter()
        .filter_map(|o| Some((o["op"].as_str()?.to_string(), o["count"].as_u64()?)))
        .collect();
    let emulator_fallbacks = list(&json["emulator_fallbacks"])
        .iter()
        .filter_map(|o| o["op"].as_str().map(str::to_string))
        .collect();
    Some(Inventory {
        file,
        device_ops: device_ops.len(),
        device_calls: calls,
        host_ops: list(&json["host_ops"]).len(),
        fp64_device,
        emulator_fallbacks,
        coverage_rate: json["coverage"]["rate_percent"].as_f64().unwrap_or(0.0),
        coverage_txt: dir.join("coverage.rank0.txt"),
    })
}
