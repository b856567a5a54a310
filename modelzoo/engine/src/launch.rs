//! `run_<model> --nproc_per_node N [--nnode M --node_rank R --master_addr A --master_port P]`:
//! this process becomes the node's launcher, as torchrun's agent is. Node 0's launcher serves
//! the job's c10d TCPStore; every launcher registers its node there and waits for the others;
//! then it starts N workers (this same binary, same arguments) with the torchrun environment
//! and watches them: one worker failing stops the rest and ends the job non-zero.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use device_sdaa::dist::Store;
use run_scripts_template::{ArgValue, ResolvedArgs, StandardArgs};

/// How long workers get to exit after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(10);
const TICK: Duration = Duration::from_millis(50);
/// How long a failure waits for the workers it takes down before naming the cause.
const SETTLE: Duration = Duration::from_millis(1000);

/// A launch for this node, from the standard DDP flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchPlan {
    pub nproc_per_node: usize,
    pub nnode: usize,
    pub node_rank: usize,
    pub master_addr: String,
    pub master_port: u16,
    /// `--dist_timeout`: how long nodes (and ranks) may take to join.
    pub timeout: Duration,
}

/// Why a launch failed.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The DDP flags do not describe a job.
    #[error("{0}")]
    Usage(String),
    /// Rendezvous between the nodes failed (store, timeout, duplicate node rank).
    #[error("{0}")]
    Rendezvous(String),
    /// A worker could not be started.
    #[error("cannot start worker rank {rank}: {source}")]
    Spawn {
        rank: usize,
        #[source]
        source: std::io::Error,
    },
    /// A worker (here, or on another node) failed; the others were stopped.
    #[error("{0}")]
    WorkerFailed(String),
    /// The job was interrupted — the launcher got SIGINT/SIGTERM, or a worker was ended by
    /// one (an external `kill`, a scheduler's preemption) — and the workers were asked to
    /// save and stop. Not a failure of the job: exit 130, as a single process gives.
    #[error("{0}")]
    Interrupted(String),
}

impl LaunchError {
    /// Exit code: 2 for bad flags or rendezvous, 130 when interrupted, else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            LaunchError::Usage(_) | LaunchError::Rendezvous(_) => 2,
            LaunchError::Interrupted(_) => 130,
            LaunchError::Spawn { .. } | LaunchError::WorkerFailed(_) => 1,
        }
    }
}

impl LaunchPlan {
    /// The plan from the standard flags; `None` for a single-process run.
    pub fn from_args(std: &StandardArgs) -> Result<Option<LaunchPlan>, LaunchError> {
        let int = |name: &str, v: i64, min: i64, max: i64| -> Result<i64, LaunchError> {
            if v < min || v > max {
                return Err(LaunchError::Usage(format!(
                    "--{name} {v}: must be between {min} and {max}"
                )));
            }
            Ok(v)
        };
        let nproc = int("nproc_per_node", std.nproc_per_node, 1, 1024)? as usize;
        let nnode = int("nnode", std.nnode, 1, 1 << 16)? as usize;
        if nproc * nnode == 1 {
            return Ok(None);
        }
        let node_rank = int("node_rank", std.node_rank, 0, i64::MAX)? as usize;
        if node_rank >= nnode {
            return Err(LaunchError::Usage(format!(
                "--node_rank {node_rank} with --nnode {nnode}: node ranks go from 0 to {}",
                nnode - 1
            )));
        }
        Ok(Some(LaunchPlan {
            nproc_per_node: nproc,
            nnode,
            node_rank,
            master_addr: std.master_addr.clone(),
            master_port: int("master_port", std.master_port, 1, 65535)? as u16,
            timeout: Duration::from_secs(
                int("dist_timeout", std.dist_timeout, 1, 86_400 * 7)? as u64
            ),
        }))
    }

    pub fn world_size(&self) -> usize {
        self.nproc_per_node * self.nnode
    }

    /// The `torchrun`-compatible environment of local worker `local_rank`.
    pub fn worker_env(&self, local_rank: usize) -> Vec<(&'static str, String)> {
        let rank = self.node_rank * self.nproc_per_node + local_rank;
        let mut env = vec![
            ("RANK", rank.to_string()),
            ("LOCAL_RANK", local_rank.to_string()),
            ("WORLD_SIZE", self.world_size().to_string()),
            ("LOCAL_WORLD_SIZE", self.nproc_per_node.to_string()),
            ("GROUP_RANK", self.node_rank.to_string()),
            ("GROUP_WORLD_SIZE", self.nnode.to_string()),
            ("ROLE_RANK", rank.to_string()),
            ("ROLE_WORLD_SIZE", self.world_size().to_string()),
            ("MASTER_ADDR", self.master_addr.clone()),
            ("MASTER_PORT", self.master_port.to_string()),
            ("TORCHELASTIC_USE_AGENT_STORE", "True".into()),
            ("TORCHELASTIC_RESTART_COUNT", "0".into()),
        ];
        // As torchrun: one intra-op thread per worker unless the user chose.
        if std::env::var_os("OMP_NUM_THREADS").is_none() && self.nproc_per_node > 1 {
            env.push(("OMP_NUM_THREADS", "1".into()));
        }
        env
    }
}

/// What `--print_cmd` shows for a data-parallel run: this node's launch command and, with
/// several nodes, the one to run on each other node.
pub fn print_commands(args: &ResolvedArgs, plan: &LaunchPlan) -> String {
    let mut out = String::new();
    if plan.nnode == 1 {
        out.push_str(&args.to_command_line());
        return out;
    }
    out.push_str(&format!(
        "# node {} of {} (this node):\n{}",
        plan.node_rank,
        plan.nnode,
        args.to_command_line()
    ));
    for node in (0..plan.nnode).filter(|&n| n != plan.node_rank) {
        let mut other = args.clone();
        other.set("node_rank", ArgValue::Int(node as i64));
        out.push_str(&format!(
            "# node {node} of {}: run on that machine\n{}",
            plan.nnode,
            other.to_command_line()
        ));
    }
    out
}

/// Run this node's share of the job: rendezvous with the other nodes, start the workers
/// (`program` with `argv`), supervise them. Returns when all succeeded, or with the first
/// failure after stopping the rest.
pub fn launch(plan: &LaunchPlan, program: PathBuf, argv: &[OsString]) -> Result<(), LaunchError> {
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&interrupted))
            .map_err(|e| LaunchError::Usage(format!("cannot install signal handlers: {e}")))?;
    }
    let store = rendezvous(plan)?;
    tracing::info!(
        "node {} of {}: starting {} workers (ranks {}..{}) of {}, store {}",
        plan.node_rank,
        plan.nnode,
        plan.nproc_per_node,
        plan.node_rank * plan.nproc_per_node,
        (plan.node_rank + 1) * plan.nproc_per_node - 1,
        plan.world_size(),
        store.address()
    );
    let mut workers: Vec<Worker> = Vec::new();
    for local in 0..plan.nproc_per_node {
        let rank = plan.node_rank * plan.nproc_per_node + local;
        let mut cmd = Command::new(&program);
        cmd.args(argv).envs(plan.worker_env(local));
        // SAFETY: prctl is async-signal-safe; run between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                // A worker never outlives its launcher, even one killed with SIGKILL.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(child) => workers.push(Worker {
                rank,
                child,
                status: None,
            }),
            Err(source) => {
                stop_all(&mut workers);
                return Err(LaunchError::Spawn { rank, source });
            }
        }
    }
    supervise(plan, &store, &mut workers, &interrupted)
}

/// Node 0 serves the store (an error at once if the port is taken); every node registers
/// its rank and waits until all `nnode` are there.
fn rendezvous(plan: &LaunchPlan) -> Result<Store, LaunchError> {
    let (addr, port) = (plan.master_addr.as_str(), plan.master_port);
    let store = if plan.node_rank == 0 {
        Store::serve(addr, port, plan.timeout, "")
    } else {
        Store::connect(addr, port, plan.timeout, "")
    }
    .map_err(|e| LaunchError::Rendezvous(e.to_string()))?;
    let err = |e: device_sdaa::dist::DistError| LaunchError::Rendezvous(e.to_string());
    if plan.nnode == 1 {
        return Ok(store);
    }
    let shape = format!(
        "nnode={} nproc_per_node={}",
        plan.nnode, plan.nproc_per_node
    );
    if plan.node_rank == 0 {
        store
            .set("mz/launch/shape", shape.as_bytes())
            .map_err(err)?;
    } else {
        let theirs =
            String::from_utf8_lossy(&store.get("mz/launch/shape").map_err(err)?).into_owned();
        if theirs != shape {
            return Err(LaunchError::Rendezvous(format!(
                "node 0 at {addr}:{port} runs {theirs}, this node {shape}: start every node with the same --nnode and --nproc_per_node"
            )));
        }
    }
    let claims = store
        .add(&format!("mz/launch/node_{}", plan.node_rank), 1)
        .map_err(err)?;
    if claims > 1 {
        return Err(LaunchError::Rendezvous(format!(
            "node_rank {} has already joined the rendezvous at {addr}:{port}: a node was started twice with --node_rank {}; give each node its own rank in 0..{}",
            plan.node_rank,
            plan.node_rank,
            plan.nnode - 1
        )));
    }
    let started = Instant::now();
    store.add("mz/launch/nodes", 1).map_err(err)?;
    loop {
        let arrived = store.add("mz/launch/nodes", 0).map_err(err)?;
        if arrived >= plan.nnode as i64 {
            return Ok(store);
        }
        if started.elapsed() >= plan.timeout {
            let present: Vec<String> = (0..plan.nnode)
                .filter(|n| store.check(&format!("mz/launch/node_{n}")).unwrap_or(false))
                .map(|n| n.to_string())
                .collect();
            return Err(LaunchError::Rendezvous(format!(
                "rendezvous at {addr}:{port} timed out after {:.0} s (--dist_timeout): {arrived} of {} nodes arrived (node ranks {}); start the others with the same --master_addr/--master_port and their own --node_rank",
                plan.timeout.as_secs_f64(),
                plan.nnode,
                present.join(", ")
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

struct Worker {
    rank: usize,
    child: Child,
    status: Option<ExitStatus>,
}

fn describe(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("signal {sig} ({})", signal_name(sig)),
        _ => status.to_string(),
    }
}

/// Whether a worker ended because it was interrupted rather than because it failed: killed by
/// SIGTERM / SIGINT before it could handle them, or exited 130 after saving on one (what
/// run_<model> does when interrupted).
fn interrupted_status(status: &ExitStatus) -> bool {
    matches!(status.signal(), Some(libc::SIGTERM | libc::SIGINT))
        || matches!(status.code(), Some(130))
}

/// Prefix of the store's abort record when a node's job was interrupted, not failed.
const INTERRUPTED_PREFIX: &str = "interrupted: ";

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        _ => "signal",
    }
}

/// Wait for the workers: all succeed → Ok; the first failure (here or reported by another
/// node through the store) → stop the rest, report it; SIGINT/SIGTERM → forward, wait, stop.
fn supervise(
    plan: &LaunchPlan,
    store: &Store,
    workers: &mut [Worker],
    interrupted: &AtomicBool,
) -> Result<(), LaunchError> {
    const ABORT: &str = "mz/launch/abort";
    let mut forwarded: Option<Instant> = None;
    let mut last_store_check = Instant::now();
    loop {
        let mut failed = None;
        for (i, w) in workers.iter_mut().enumerate() {
            if w.status.is_some() {
                continue;
            }
            if let Ok(Some(status)) = w.child.try_wait() {
                w.status = Some(status);
                if !status.success() && forwarded.is_none() && failed.is_none() {
                    failed = Some(i);
                }
            }
        }
        if let Some(first) = failed {
            // A rank that dies takes its peers down with it (their collectives fail a moment
            // later): let them end, then name the one that failed first, not a bystander.
            settle(workers, SETTLE);
            let cause = root_cause(workers, first, |rank| {
                store
                    .check(&crate::dist::interrupted_key(0, rank))
                    .unwrap_or(false)
            });
            let w = &workers[cause];
            let status = w.status.expect("the failed worker has a status");
            let interrupted = interrupted_status(&status);
            let who = format!(
                "worker rank {} (node {}, pid {})",
                w.rank,
                plan.node_rank,
                w.child.id()
            );
            let others: Vec<String> = workers
                .iter()
                .enumerate()
                .filter(|(i, o)| *i != cause && o.status.is_some_and(|s| !s.success()))
                .map(|(_, o)| format!("rank {} {}", o.rank, describe(&o.status.unwrap())))
                .collect();
            let then = if others.is_empty() {
                String::new()
            } else {
                format!(" (then {})", others.join(", "))
            };
            let message = if interrupted {
                format!(
                    "{who} was interrupted ({}){then}; asked the other workers to save and stop",
                    describe(&status)
                )
            } else {
                format!(
                    "{who} failed with {}{then}; stopped the other workers",
                    describe(&status)
                )
            };
            if plan.nnode > 1 {
                let record = if interrupted {
                    format!("{INTERRUPTED_PREFIX}{message}")
                } else {
                    message.clone()
                };
                let _ = store.set(ABORT, record.as_bytes());
            }
            stop_all(workers);
            return Err(if interrupted {
                LaunchError::Interrupted(format!("interrupted: {message}"))
            } else {
                LaunchError::WorkerFailed(message)
            });
        }
        let stopped = || {
            LaunchError::Interrupted("interrupted: the workers were asked to save and stop".into())
        };
        if workers.iter().all(|w| w.status.is_some()) {
            return match forwarded {
                Some(_) => Err(stopped()),
                None => Ok(()),
            };
        }
        if interrupted.load(Ordering::SeqCst) && forwarded.is_none() {
            tracing::warn!("interrupted: asking the workers to save and stop");
            signal_workers(workers, libc::SIGTERM);
            forwarded = Some(Instant::now());
        }
        if forwarded.is_some_and(|t| t.elapsed() > GRACE * 3) {
            stop_all(workers);
            return Err(stopped());
        }
        if plan.nnode > 1 && last_store_check.elapsed() > Duration::from_secs(1) {
            last_store_check = Instant::now();
            if let Ok(true) = store.check(ABORT) {
                let why = store
                    .get(ABORT)
                    .map(|v| String::from_utf8_lossy(&v).into_owned())
                    .unwrap_or_default();
                stop_all(workers);
                return Err(match why.strip_prefix(INTERRUPTED_PREFIX) {
                    Some(why) => LaunchError::Interrupted(format!(
                        "interrupted on another node ({why}); stopped this node's workers"
                    )),
                    None => LaunchError::WorkerFailed(format!(
                        "another node failed ({why}); stopped this node's workers"
                    )),
                });
            }
        }
        std::thread::sleep(TICK);
    }
}

fn signal_workers(workers: &[Worker], sig: i32) {
    for w in workers.iter().filter(|w| w.status.is_none()) {
        // SAFETY: plain kill(2) on our own child's pid (not yet reaped, so not reused).
        unsafe {
            libc::kill(w.child.id() as libc::pid_t, sig);
        }
    }
}

/// SIGTERM the running workers, give them [`GRACE`] to exit, then SIGKILL and reap all.
/// Collects the exits of the workers that end within `window`, signalling none.
fn settle(workers: &mut [Worker], window: Duration) {
    let deadline = Instant::now() + window;
    while Instant::now() < deadline && workers.iter().any(|w| w.status.is_none()) {
        for w in workers.iter_mut().filter(|w| w.status.is_none()) {
            if let Ok(Some(s)) = w.child.try_wait() {
                w.status = Some(s);
            }
        }
        std::thread::sleep(TICK);
    }
}

/// Of the failed workers, the one whose failure caused the others': a worker killed by a
/// signal (SIGKILL, SIGSEGV, ... — not an interrupt) over one that exited with an error when
/// its peer vanished; of interrupted workers (all exit 130 at the step they agreed to stop
/// at), the one that recorded being interrupted itself (`noted(rank)`: the store key its
/// engine sets, [`crate::dist::interrupted_key`]; the launcher sets attempt 0); else the
/// first failure seen (`first`).
fn root_cause(workers: &[Worker], first: usize, noted: impl Fn(usize) -> bool) -> usize {
    let killed = |w: &Worker| {
        w.status
            .is_some_and(|s| s.signal().is_some() && !interrupted_status(&s))
    };
    if killed(&workers[first]) {
        return first;
    }
    if let Some(i) = workers.iter().position(killed) {
        return i;
    }
    let interrupted_itself =
        |w: &Worker| w.status.is_some_and(|s| interrupted_status(&s)) && noted(w.rank);
    workers.iter().position(interrupted_itself).unwrap_or(first)
}

fn stop_all(workers: &mut [Worker]) {
    signal_workers(workers, libc::SIGTERM);
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline {
        for w in workers.iter_mut().filter(|w| w.status.is_none()) {
            if let Ok(Some(s)) = w.child.try_wait() {
                w.status = Some(s);
            }
        }
        if workers.iter().all(|w| w.status.is_some()) {
            return;
        }
        std::thread::sleep(TICK);
    }
    for w in workers.iter_mut().filter(|w| w.status.is_none()) {
        let _ = w.child.kill();
        w.status = w.child.wait().ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(rank: usize, script: &str) -> Worker {
        let mut child = std::process::Command::new("sh")
            .args(["-c", script])
            .spawn()
            .unwrap();
        let status = child.wait().unwrap();
        Worker {
            rank,
            child,
            status: Some(status),
        }
    }

    /// Issue #28: a killed rank 0 was reported as rank 1, the bystander whose collective failed
    /// when rank 0 vanished (and was seen first).
    #[test]
    fn the_killed_worker_is_the_cause_not_the_peer_that_lost_it() {
        let none = |_: usize| false;
        let workers = [worker(0, "kill -9 $$"), worker(1, "exit 1")];
        assert_eq!(root_cause(&workers, 1, none), 0);
        // No worker killed: the first failure seen.
        let workers = [worker(0, "exit 3"), worker(1, "exit 1")];
        assert_eq!(root_cause(&workers, 1, none), 1);
        // An interrupt is not a crash.
        let workers = [worker(0, "kill -TERM $$"), worker(1, "exit 1")];
        assert_eq!(root_cause(&workers, 1, none), 1);
    }

    /// Both ranks stop at the step they agreed on and exit 130; rank 0 may be seen first (a
    /// gate named it, though rank 1 got the SIGTERM): the rank that recorded its own interrupt
    /// is the cause.
    #[test]
    fn of_ranks_interrupted_together_the_one_signalled_is_the_cause() {
        let workers = [worker(0, "exit 130"), worker(1, "exit 130")];
        assert_eq!(root_cause(&workers, 0, |rank| rank == 1), 1);
        // Nothing recorded (an engine that could not reach the store): the first seen.
        assert_eq!(root_cause(&workers, 0, |_| false), 0);
        // A crash still outranks an interrupt.
        let workers = [worker(0, "kill -9 $$"), worker(1, "exit 130")];
        assert_eq!(root_cause(&workers, 1, |rank| rank == 1), 0);
    }
}
