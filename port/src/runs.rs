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
        .and_then(|()| {
            modelzoo_support::write_atomic(&shim.join("_modelzoo_port_ops.py"), OPS_SHIM.as_bytes())
        })
        .map_err(|e| PortError::Input {
            path: shim.clone(),
            message: format!("cannot write the port's shim: {e}"),
        })
}

/// Whether the shim recorded autocast in the original's run (rank 0).
pub(crate) fn read_autocast(dir: &Path) -> bool {
    // Bounded and regular only: the command could leave a FIFO or a huge file there.
    modelzoo_support::input::read_bounded(&dir.join("meta.rank0.json"), 1 << 20, "shim record")
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
        eval: f.eval,
    })
}

/// How a run computes the ops that `--op` routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpPrecision {
    /// In the caller's dtype: every run but one.
    AsCalled,
    /// In float64: the original's second run under the step rule, whose distance from the
    /// first then includes the rounding of the op that the port replaces (ops.rs,
    /// `OpRouting::env`).
    Float64,
}

/// Runs the command once, in a fresh copy under the work directory: the original's copy is
/// made from SRC, the candidate's from the port directory. Its output goes to
/// `<work>/<label>.log`.
pub(crate) fn run_side(
    ctx: &Ctx,
    side: Side,
    label: &str,
    ops: OpPrecision,
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
    if let Some(seed) = ctx.seed {
        env.push(("MODELZOO_PORT_SEED", seed.to_string().into()));
    }
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
    let ops_record = ctx.work.join("ops").join(label);
    let routed = ctx.routing.env(
        side == Side::Baseline,
        &ops_record,
        ops == OpPrecision::Float64,
    );
    if !routed.is_empty() {
        fresh_dir(&ops_record)?;
        env.extend(routed);
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
    let text = ConsoleText::read(&console);
    let tail: Vec<String> = {
        let lines: Vec<&str> = text.end.lines().collect();
        let mut tail: Vec<String> = lines[lines.len().saturating_sub(20)..]
            .iter()
            .map(|l| l.to_string())
            .collect();
        if let Some(why) = &text.unread {
            tail.push(format!("(port: the console was not read: {why})"));
        }
        tail
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
        banner: (side == Side::Candidate)
            .then(|| banner(&text.start).or_else(|| banner(&text.end)))
            .flatten(),
        fault_injection,
        ops_routed: crate::ops::read_record(&ops_record),
        eval: BTreeMap::new(),
    };
    if outcome == RunOutcome::Interrupted {
        return Ok(run);
    }
    match find_loss(&dir, &console, ctx.log.as_deref(), ctx.loss_key.as_deref()) {
        Ok(found) => {
            run.loss_log = Some(found.path);
            run.loss_metrics = found.metrics;
            run.steps = found.values;
            run.eval = found.eval;
        }
        Err(why) => run.loss_error = Some(why),
    }
    if !run.ran_to_the_end() {
        run.crash = trace::user_crash(&text.end, &dir).map(|crash| {
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

/// How much of a console's start port holds (where a banner is).
const CONSOLE_START: u64 = 1 << 20;
/// How much of a console's end port holds (the last lines shown, the traceback of a crash).
const CONSOLE_END: u64 = 4 << 20;

/// What port keeps of a run's console: the command's output stays on disk (the child writes
/// it there directly) and port reads at most [`CONSOLE_START`] + [`CONSOLE_END`] bytes of it,
/// so 1 GB of output costs 5 MB, not 2 GB (issue #38). The losses are streamed from the file
/// itself ([`losses::find`]).
pub(crate) struct ConsoleText {
    /// The first bytes (the whole console when it is small).
    pub start: String,
    /// The last bytes, from a line start (the whole console when it is small).
    pub end: String,
    /// Why nothing was read: the command replaced its console with a FIFO or a device (opened
    /// non-blocking and refused, never waited on), or removed it.
    pub unread: Option<String>,
}

impl ConsoleText {
    pub(crate) fn read(console: &Path) -> ConsoleText {
        use std::io::{Read, Seek, SeekFrom};
        let mut text = ConsoleText {
            start: String::new(),
            end: String::new(),
            unread: None,
        };
        let mut file = match modelzoo_support::input::open_regular(console, "console") {
            Ok(f) => f,
            Err(e) => {
                text.unread = Some(e.to_string());
                return text;
            }
        };
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut bytes = Vec::new();
        if size <= CONSOLE_START + CONSOLE_END {
            let _ = (&mut file)
                .take(CONSOLE_START + CONSOLE_END)
                .read_to_end(&mut bytes);
            text.start = String::from_utf8_lossy(&bytes).into_owned();
            text.end = text.start.clone();
            return text;
        }
        let _ = (&mut file).take(CONSOLE_START).read_to_end(&mut bytes);
        text.start = String::from_utf8_lossy(&bytes).into_owned();
        bytes.clear();
        if file.seek(SeekFrom::Start(size - CONSOLE_END)).is_ok() {
            let _ = file.take(CONSOLE_END).read_to_end(&mut bytes);
        }
        // From the first whole line on.
        let from = bytes.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
        text.end = String::from_utf8_lossy(&bytes[from..]).into_owned();
        text
    }
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
    let bytes = modelzoo_support::input::read_bounded(&file, 256 << 20, "op inventory").ok()?;
    let json: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
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

#[cfg(test)]
mod console_tests {
    use super::*;

    /// Issue #38 D12: a console of 3 GiB (sparse: nothing real written) is read as its first
    /// and last bytes only, the last from a line start.
    #[test]
    fn a_large_console_is_read_as_its_start_and_end_only() {
        let tmp = tempfile::tempdir().unwrap();
        let console = tmp.path().join("baseline.log");
        std::fs::write(&console, "Torch-SDAA | 2.1.1\n").unwrap();
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(&console)
            .unwrap();
        f.set_len(3 << 30).unwrap();
        let mut f = f;
        std::io::Write::write_all(
            &mut f,
            b"x\nTraceback (most recent call last):\nlast line\n",
        )
        .unwrap();
        let text = ConsoleText::read(&console);
        assert!(text.unread.is_none());
        assert_eq!(text.start.len() as u64, CONSOLE_START);
        assert!(text.end.len() as u64 <= CONSOLE_END);
        assert!(text
            .end
            .ends_with("Traceback (most recent call last):\nlast line\n"));
        assert_eq!(banner(&text.start).as_deref(), Some("Torch-SDAA | 2.1.1"));
        // A small console is read whole, start and end alike.
        std::fs::write(&console, "a\nb\n").unwrap();
        let text = ConsoleText::read(&console);
        assert_eq!(
            (text.start.as_str(), text.end.as_str()),
            ("a\nb\n", "a\nb\n")
        );
    }

    /// Issue #38 C9: a console the command replaced with a FIFO is refused at once (port
    /// blocked on it forever, deaf to SIGTERM), and says so.
    #[test]
    fn a_console_replaced_by_a_fifo_is_not_waited_on() {
        let tmp = tempfile::tempdir().unwrap();
        let console = tmp.path().join("candidate.log");
        assert!(std::process::Command::new("mkfifo")
            .arg(&console)
            .status()
            .unwrap()
            .success());
        let (tx, rx) = std::sync::mpsc::channel();
        let c = console.clone();
        std::thread::spawn(move || {
            let text = ConsoleText::read(&c);
            let found = find_loss(c.parent().unwrap(), &c, None, None).map(|_| ());
            tx.send((text.unread, found)).unwrap();
        });
        let (unread, found) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("blocked on a FIFO");
        assert!(unread.unwrap().contains("is a FIFO"));
        assert!(found.unwrap_err().contains("is a FIFO"));
    }
}
