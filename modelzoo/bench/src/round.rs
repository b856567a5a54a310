//! One round of a case: the model's own command on every node (one launcher per node rank,
//! on loopback here), timed from launch to the last exit, then its finished_info.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use modelzoo_support::process::{run_command, RunOutcome};
use serde::Serialize;

use crate::config::{scalar_text, Layer, Resolved, SYNTHETIC};
use crate::finished::{self, FinishedInfo};
use crate::BenchError;

/// How rounds run.
#[derive(Debug)]
pub struct RoundOptions<'a> {
    /// Directories put in front of PATH (where the `run_<model>` binaries are).
    pub path_prefix: Vec<PathBuf>,
    /// Working directory of the runs (paths in the configs are relative to it).
    pub cwd: PathBuf,
    /// A round running longer is killed and recorded as failed.
    pub timeout: Duration,
    /// Set by SIGINT / SIGTERM: the running round is stopped.
    pub cancel: &'a AtomicBool,
}

/// How a round ended.
#[derive(Debug, Clone, Serialize)]
pub struct RoundResult {
    pub round: usize,
    pub dir: PathBuf,
    /// The command of each node rank.
    pub commands: Vec<String>,
    /// `Some` when the round trained and its figures hold.
    pub info: Option<FinishedInfo>,
    /// Why it failed.
    pub error: Option<String>,
    /// The last lines the failed round printed.
    pub log_tail: Option<String>,
    /// Seconds from launching the nodes to the last one's exit.
    pub run_secs: f64,
    /// Seconds the bench spent on the round besides the run itself.
    pub overhead: f64,
    /// It ran on the SDAA emulator, not SDAA hardware ([`emulated`]).
    #[serde(default)]
    pub emulated: bool,
}

/// What the SDAA emulator prints that SDAA hardware never does: the device name its runtime
/// reports (the engine logs it when the run starts) and the emulator's torch_sdaa version
/// table, every row marked `EMULATOR`.
pub const EMULATOR_MARKS: [&str; 2] = ["SDAA emulator device", "(EMULATOR"];

/// Whether a round of `case` ran on the SDAA emulator: a case on the `sdaa` device whose runs
/// said so on their console (`consoles`), or — when the console is silent on it (a quiet
/// `RUST_LOG`) — whose SDAA runtime, the `libsdaart.so` under `$SDAA_HOME` / `$TECO_HOME`
/// the runs load, is the emulator's (it holds the same device-name text).
pub fn emulated(case: &Resolved, consoles: &[PathBuf]) -> bool {
    if case.hardware.device != "sdaa" {
        return false;
    }
    if consoles.iter().any(|c| mentions(c, &EMULATOR_MARKS)) {
        return true;
    }
    ["SDAA_HOME", "TECO_HOME"]
        .iter()
        .find_map(|v| std::env::var_os(v).filter(|h| !h.is_empty()))
        .is_some_and(|home| {
            mentions(
                &Path::new(&home).join("lib64/libsdaart.so"),
                &EMULATOR_MARKS[..1],
            )
        })
}

/// Whether the file at `path` (a regular file; read in 64 KiB chunks, so any size) holds one
/// of `marks`.
fn mentions(path: &Path, marks: &[&str]) -> bool {
    use std::io::Read;
    let Ok(mut f) = model_config::files::open_regular(path) else {
        return false;
    };
    let finders: Vec<memchr::memmem::Finder> =
        marks.iter().map(memchr::memmem::Finder::new).collect();
    let keep = marks.iter().map(|m| m.len()).max().unwrap_or(1) - 1;
    let mut buf = vec![0u8; 64 * 1024 + keep];
    let mut held = 0;
    loop {
        let n = match f.read(&mut buf[held..]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        let filled = held + n;
        if finders.iter().any(|m| m.find(&buf[..filled]).is_some()) {
            return true;
        }
        // Keep the tail, so a mark cut between two reads is still found.
        held = keep.min(filled);
        buf.copy_within(filled - held..filled, 0);
    }
}

/// The command line of node `node_rank` writing to `out_dir`; `port` is the rendezvous port
/// of a data-parallel job.
pub fn command(case: &Resolved, out_dir: &Path, node_rank: usize, port: u16) -> Vec<String> {
    let mut argv = vec![case.base.binary.clone()];
    let mut overrides = Vec::new();
    for (name, (value, _)) in &case.params {
        if name == "vendor" || name == "data_dir" {
            continue;
        }
        let Some(text) = scalar_text(value) else {
            continue;
        };
        if name.contains('.') {
            overrides.push(format!("{name}={text}"));
        } else if let serde_yaml::Value::Bool(b) = value {
            if *b {
                argv.push(format!("--{name}"));
            }
        } else if text.starts_with('-') {
            // `--step -1` would read -1 as a flag.
            argv.push(format!("--{name}={text}"));
        } else {
            argv.push(format!("--{name}"));
            argv.push(text);
        }
    }
    for o in overrides {
        argv.push("-o".into());
        argv.push(o);
    }
    argv.extend(["--device".into(), case.hardware.device.clone()]);
    argv.extend(["--output_dir".into(), out_dir.display().to_string()]);
    if let Some(d) = dataset(case) {
        argv.extend(["--dataset_path".into(), d]);
    }
    let key = &case.key;
    if key.world_size() > 1 {
        for (flag, v) in [
            ("--nproc_per_node", key.nproc.to_string()),
            ("--nnode", key.nnodes.to_string()),
            ("--node_rank", node_rank.to_string()),
            ("--master_addr", "127.0.0.1".to_string()),
            ("--master_port", port.to_string()),
        ] {
            argv.extend([flag.to_string(), v]);
        }
    }
    argv
}

/// The dataset path passed to the runs: `None` for the model's built-in data.
pub fn dataset(case: &Resolved) -> Option<String> {
    case.text("data_dir")
        .filter(|d| !d.is_empty() && d != SYNTHETIC)
}

/// A case that needs a dataset must have one before anything runs.
pub fn check_dataset(case: &Resolved) -> Result<(), BenchError> {
    let dir = case.text("data_dir").unwrap_or_default();
    if dir.is_empty() {
        return Err(BenchError::NoDataset {
            case: case.key.to_string(),
            vendor_config: case.vendor_path.clone(),
        });
    }
    if dir != SYNTHETIC && !Path::new(&dir).exists() {
        let layer = match case.params.get("data_dir").map(|p| p.1) {
            Some(Layer::TestConf) => "the test_conf",
            Some(Layer::Vendor) => "the vendor config",
            _ => "the base config",
        };
        return Err(BenchError::Usage(format!(
            "case {}: data_dir {dir} (from {layer}) does not exist",
            case.key
        )));
    }
    Ok(())
}

/// A free TCP port on loopback for the job's rendezvous store.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `argv` as one shell line, each argument quoted where the shell would split or expand it.
pub fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| shlex::try_quote(a).map_or_else(|_| a.clone(), |q| q.into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last `n` lines of a console log.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Run round `round` of `case` in `dir` (created fresh), write its `finished_info.json`.
pub fn run_round(
    case: &Resolved,
    round: usize,
    dir: &Path,
    opts: &RoundOptions<'_>,
) -> RoundResult {
    let started = Instant::now();
    let mut result = RoundResult {
        round,
        dir: dir.to_path_buf(),
        commands: Vec::new(),
        info: None,
        error: None,
        log_tail: None,
        run_secs: 0.0,
        overhead: 0.0,
        emulated: false,
    };
    let fail = |mut r: RoundResult, why: String, tail: Option<String>| {
        r.error = Some(why);
        r.log_tail = tail;
        r.overhead = (started.elapsed().as_secs_f64() - r.run_secs).max(0.0);
        r
    };
    if dir.exists() {
        if let Err(e) = std::fs::remove_dir_all(dir) {
            return fail(result, format!("cannot clear {}: {e}", dir.display()), None);
        }
    }
    let out_dir = dir.join("output");
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        return fail(
            result,
            format!("cannot create {}: {e}", out_dir.display()),
            None,
        );
    }
    let out_abs = std::path::absolute(&out_dir).unwrap_or(out_dir.clone());
    let port = match free_port() {
        Ok(p) => p,
        Err(e) => return fail(result, format!("no free port on 127.0.0.1: {e}"), None),
    };
    let nodes = case.key.nnodes;
    result.commands = (0..nodes)
        .map(|r| shell_line(&command(case, &out_abs, r, port)))
        .collect();
    let consoles: Vec<PathBuf> = (0..nodes)
        .map(|r| dir.join(format!("node{r}.log")))
        .collect();
    let launch = Instant::now();
    let outcomes: Vec<RunOutcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..nodes)
            .map(|r| {
                let (cmd, console) = (&result.commands[r], &consoles[r]);
                s.spawn(move || {
                    run_command(
                        cmd,
                        &opts.cwd,
                        opts.timeout,
                        console,
                        &opts.path_prefix,
                        Duration::from_secs(5),
                        opts.cancel,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| RunOutcome::SpawnFailed("runner thread panicked".into()))
            })
            .collect()
    });
    let e2e = launch.elapsed().as_secs_f64();
    result.run_secs = e2e;
    result.emulated = emulated(case, &consoles);
    let log_tail = || {
        consoles
            .iter()
            .enumerate()
            .map(|(r, c)| format!("--- node {r} ({}) ---\n{}", c.display(), tail(c, 15)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    if let Some((r, bad)) = outcomes
        .iter()
        .enumerate()
        .find(|(_, o)| **o != RunOutcome::Exited { code: 0 })
    {
        let why = match bad {
            RunOutcome::Exited { code } => format!("node {r} exited with status {code}"),
            RunOutcome::Signalled { signal } => format!("node {r} killed by signal {signal}"),
            RunOutcome::TimedOut => format!(
                "node {r} ran past the {} s timeout (killed)",
                opts.timeout.as_secs()
            ),
            RunOutcome::Interrupted => "interrupted".to_string(),
            RunOutcome::SpawnFailed(e) => format!("node {r} could not start: {e}"),
        };
        return fail(result, why, Some(log_tail()));
    }
    let log = std::fs::read_dir(&out_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with("_log.json"));
    let Some(log) = log else {
        let why = format!("the run wrote no <model>_log.json in {}", out_dir.display());
        return fail(result, why, Some(log_tail()));
    };
    let info = finished::read_log(&log)
        .and_then(|facts| finished::finished_info(case, round, e2e, &facts));
    let info = match info {
        Ok(mut i) => {
            i.emulated = result.emulated;
            i
        }
        Err(why) => return fail(result, why, Some(log_tail())),
    };
    let json = serde_json::to_string_pretty(&info).unwrap_or_default();
    if let Err(e) = validator::report::write_atomic(dir, "finished_info.json", json.as_bytes()) {
        return fail(
            result,
            format!("cannot write finished_info.json: {e}"),
            None,
        );
    }
    result.info = Some(info);
    result.overhead = (started.elapsed().as_secs_f64() - e2e).max(0.0);
    result
}
