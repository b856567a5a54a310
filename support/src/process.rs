//! Running a command the tools do not trust to end on its own — a model's functional command
//! (`modelzoo ci`), a benchmark round (`modelzoo bench`), a porter's training script (`modelzoo
//! port`): in its own process group, output to a file, stopped on timeout or cancel (SIGTERM,
//! then SIGKILL after a grace period). However it ends, nothing it started outlives it: its
//! process group is killed, and so is every process that still carries the job's environment
//! marker ([`JOB_ENV`]) — background jobs, and daemons that left the group and the session with
//! `setsid`. The sweep runs on every way out of [`run`], a panic included (a guard owns the
//! child). A daemon that also clears its environment (`env -i setsid sleep 1000 &`) carries no
//! marker: the process running jobs is a child subreaper ([`become_subreaper`]), so such a
//! daemon is re-parented to it, and once no job runs every process it adopted is ended
//! (SIGTERM, SIGKILL after the grace) and reaped.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, kill_process_group, Pid, Signal};

/// The environment variable that marks every process of one job (inherited by its children),
/// so the ones that left its process group can still be found and stopped.
pub const JOB_ENV: &str = "MODELZOO_JOB";

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    Exited {
        code: i32,
    },
    Signalled {
        signal: i32,
    },
    /// Ran past its timeout; everything it started was killed.
    TimedOut,
    /// The caller was interrupted (SIGINT/SIGTERM); everything the command started was killed.
    Interrupted,
    SpawnFailed(String),
}

const POLL: Duration = Duration::from_millis(20);

/// The pids of the running jobs' own children (the ones [`run`] waits for): never swept as
/// adopted orphans. Jobs are spawned and registered under this lock, and the sweep of adopted
/// orphans runs under it when the last job ends, so a job starting meanwhile is never taken
/// for an orphan.
static RUNNING: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Makes this process a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`): a process a job
/// starts that leaves its process group and drops the job's marker (`env -i setsid daemon &`)
/// is re-parented here instead of to init when its parent exits, so [`run`] can end it once
/// no job runs (issue #38 E15). `modelzoo ci` and `modelzoo port` (every user of [`run`])
/// become one on their first job; calling it again does nothing. Returns whether this process
/// is one.
pub fn become_subreaper() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument and changes
        // only this process's attribute.
        let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
        if r != 0 {
            tracing::warn!(
                error = %std::io::Error::last_os_error(),
                "cannot become a child subreaper: a daemon that clears its environment may outlive its job"
            );
        }
        r == 0
    })
}

fn running() -> std::sync::MutexGuard<'static, Vec<u32>> {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// A command to run under [`run`]'s supervision.
pub struct Job<'a> {
    /// Program, arguments, working directory and environment; [`run`] sets stdin (null),
    /// stdout and stderr (the console), the process group and the job marker.
    pub command: Command,
    /// Longest it may run; a value past what the clock can represent means no deadline.
    pub timeout: Duration,
    /// stdout and stderr are appended here.
    pub console: &'a Path,
    /// Between SIGTERM and SIGKILL when it must be stopped.
    pub kill_grace: Duration,
    /// Set by the caller's signal handler: stop the command now.
    pub cancel: &'a AtomicBool,
}

/// `sh -c command` in `cwd`, with `path_prefix` put before PATH: how model.yaml's and the
/// bench's command lines run.
pub fn shell(command: &str, cwd: &Path, path_prefix: &[PathBuf]) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(cwd);
    if let Some(path) = prefixed_path(path_prefix) {
        cmd.env("PATH", path);
    }
    cmd
}

/// PATH with `prefix` in front, or None when there is nothing to add.
pub fn prefixed_path(prefix: &[PathBuf]) -> Option<std::ffi::OsString> {
    if prefix.is_empty() {
        return None;
    }
    let mut paths: Vec<PathBuf> = prefix.to_vec();
    if let Some(old) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).ok()
}

/// [`run`] of [`shell`]`(command, cwd, path_prefix)`.
pub fn run_command(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    console: &Path,
    path_prefix: &[PathBuf],
    kill_grace: Duration,
    cancel: &AtomicBool,
) -> RunOutcome {
    run(Job {
        command: shell(command, cwd, path_prefix),
        timeout,
        console,
        kill_grace,
        cancel,
    })
}

/// Runs the job. Returns when its command exits, or after its timeout (or once `cancel` is
/// set) with everything it started stopped. Whatever it left running (in its group, or marked
/// with its [`JOB_ENV`] anywhere) is killed either way. Never panics on a timeout too large
/// for the clock.
pub fn run(job: Job<'_>) -> RunOutcome {
    let Job {
        mut command,
        timeout,
        console,
        kill_grace,
        cancel,
    } = job;
    let log = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(console)
    {
        Ok(f) => f,
        Err(e) => return RunOutcome::SpawnFailed(format!("{}: {e}", console.display())),
    };
    let err_log = match log.try_clone() {
        Ok(f) => f,
        Err(e) => return RunOutcome::SpawnFailed(format!("{}: {e}", console.display())),
    };
    let marker = job_marker();
    command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        .env(JOB_ENV, &marker)
        .process_group(0);
    become_subreaper();
    let child = {
        let mut running = running();
        match command.spawn() {
            Ok(c) => {
                running.push(c.id());
                c
            }
            Err(e) => return RunOutcome::SpawnFailed(e.to_string()),
        }
    };
    // From here on, however this function is left, the job is stopped and the child reaped.
    let mut group = Group {
        pgid: Pid::from_raw(child.id() as i32),
        child,
        marker,
        kill_grace,
        seen: Vec::new(),
    };
    let Group {
        pgid, child, seen, ..
    } = &mut group;
    let (pgid, root) = (*pgid, child.id() as i32);
    let deadline = after(timeout);
    let mut next_scan = Instant::now() + SCAN;
    let outcome = loop {
        match child.try_wait() {
            Ok(Some(status)) => break exit_outcome(status),
            Ok(None) if passed(deadline) || cancel.load(Ordering::SeqCst) => {
                let interrupted = cancel.load(Ordering::SeqCst);
                tracing::warn!(
                    interrupted,
                    "stopping the command and everything it started"
                );
                signal_group(pgid, Signal::TERM);
                if wait_until(child, after(kill_grace)).is_none() {
                    signal_group(pgid, Signal::KILL);
                    let _ = child.wait();
                }
                break if interrupted {
                    RunOutcome::Interrupted
                } else {
                    RunOutcome::TimedOut
                };
            }
            Ok(None) => {
                if Instant::now() >= next_scan {
                    record_descendants(root, seen);
                    next_scan = Instant::now() + SCAN;
                }
                std::thread::sleep(POLL);
            }
            Err(e) => {
                signal_group(pgid, Signal::KILL);
                let _ = child.wait();
                break RunOutcome::SpawnFailed(format!("cannot wait for it: {e}"));
            }
        }
    };
    // Whatever it left running (background jobs, detached daemons) goes too: `group`'s drop.
    drop(group);
    outcome
}

/// A value of [`JOB_ENV`] no other job of any process shares: pid, a per-process counter and
/// the clock.
fn job_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The running command: dropping it SIGKILLs its process group and every process carrying its
/// marker, and reaps the child, so no exit path (an early return, a panic) leaves it running.
struct Group {
    pgid: Option<Pid>,
    child: Child,
    marker: String,
    /// Between SIGTERM and SIGKILL for the orphans it adopted.
    kill_grace: Duration,
    /// Every descendant seen while it ran, `(pid, start time)`: ended with it even when it
    /// left the group, dropped the marker and was re-parented (to this subreaper) while
    /// other jobs still run.
    seen: Vec<(i32, u64)>,
}

impl Drop for Group {
    fn drop(&mut self) {
        signal_group(self.pgid, Signal::KILL);
        // Returns at once if it was already reaped (the status is kept) or has just been
        // killed.
        let _ = self.child.wait();
        kill_marked(&self.marker);
        end_seen(&self.seen, self.kill_grace);
        let mut running = running();
        let me = self.child.id();
        running.retain(|&pid| pid != me);
        if running.is_empty() && become_subreaper() {
            end_adopted(self.kill_grace, &running);
        }
    }
}

/// How often a running job's descendants are recorded (one pass over /proc).
const SCAN: Duration = Duration::from_millis(200);

/// `(ppid, pgrp, start time)` of a live process from /proc/<pid>/stat; None for a zombie
/// or a process gone.
fn stat_of(pid: i32) -> Option<(i32, i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's `)`: state (field 3), ppid (4), pgrp (5), ... starttime (22).
    let (_, rest) = stat.rsplit_once(')')?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    if f.first() == Some(&"Z") {
        return None;
    }
    Some((
        f.get(1)?.parse().ok()?,
        f.get(2)?.parse().ok()?,
        f.get(19)?.parse().ok()?,
    ))
}

/// Adds the live descendants of `root` not yet in `seen`.
fn record_descendants(root: i32, seen: &mut Vec<(i32, u64)>) {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return;
    };
    let procs: Vec<(i32, i32, u64)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| stat_of(pid).map(|(ppid, _, start)| (pid, ppid, start)))
        .collect();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for &(pid, ppid, start) in &procs {
            if ppid == parent && !seen.contains(&(pid, start)) {
                seen.push((pid, start));
                parents.push(pid);
            }
        }
    }
}

/// Ends the recorded descendants still alive (the same process: same start time): SIGTERM
/// (their group too when they lead one), SIGKILL after `grace`, reaped when adopted.
fn end_seen(seen: &[(i32, u64)], grace: Duration) {
    let alive = |&&(pid, start): &&(i32, u64)| stat_of(pid).is_some_and(|(_, _, s)| s == start);
    let mut left: Vec<(i32, u64)> = seen.iter().filter(alive).copied().collect();
    if left.is_empty() {
        return;
    }
    tracing::warn!(
        count = left.len(),
        "ending processes the job left behind outside its group and marker"
    );
    for &(pid, _) in &left {
        let pgid = stat_of(pid).map_or(0, |(_, g, _)| g);
        signal_adopted(pid, pgid, Signal::TERM);
    }
    let deadline = after(grace);
    while !left.is_empty() && !passed(deadline) {
        left.retain(|p| {
            reap(p.0, false);
            alive(&p)
        });
        if !left.is_empty() {
            std::thread::sleep(POLL);
        }
    }
    for &(pid, _) in &left {
        signal_adopted(pid, 0, Signal::KILL);
    }
    for &(pid, _) in seen {
        reap(pid, false);
    }
}

/// Rounds of [`end_adopted`]: a daemon killed may leave children of its own, adopted in turn.
const ADOPTED_ROUNDS: usize = 20;

/// Ends every process this subreaper adopted: SIGTERM (to its process group too when it leads
/// one), SIGKILL to what is left after `grace`, each reaped — again while new ones are adopted.
/// Adopted means: a child of this process, outside this process's group (what this process
/// spawns itself outside [`run`] stays in its group and is left to whoever waits for it), and
/// not one of `jobs` (the running jobs' own children). Called with [`RUNNING`] held.
fn end_adopted(grace: Duration, jobs: &[u32]) {
    for _ in 0..ADOPTED_ROUNDS {
        let adopted = adopted(jobs);
        if adopted.is_empty() {
            return;
        }
        tracing::warn!(
            count = adopted.len(),
            "ending processes a job left behind that escaped its group and marker"
        );
        for &(pid, pgid) in &adopted {
            signal_adopted(pid, pgid, Signal::TERM);
        }
        let deadline = after(grace);
        let mut left: Vec<(i32, i32)> = adopted;
        while !left.is_empty() && !passed(deadline) {
            left.retain(|&(pid, _)| !reap(pid, false));
            if !left.is_empty() {
                std::thread::sleep(POLL);
            }
        }
        for &(pid, pgid) in &left {
            signal_adopted(pid, pgid, Signal::KILL);
            reap(pid, true);
        }
    }
    tracing::warn!(
        "processes are still being adopted after {ADOPTED_ROUNDS} rounds of ending them"
    );
}

fn signal_adopted(pid: i32, pgid: i32, signal: Signal) {
    if let Some(p) = Pid::from_raw(pid) {
        let _ = kill_process(p, signal);
    }
    if pgid == pid {
        signal_group(Pid::from_raw(pgid), signal);
    }
}

/// Reaps child `pid` (waiting for it when `block`); true when it is gone.
fn reap(pid: i32, block: bool) -> bool {
    let mut status = 0;
    let flags = if block { 0 } else { libc::WNOHANG };
    // SAFETY: waitpid on one pid, status written to a local.
    let r = unsafe { libc::waitpid(pid, &mut status, flags) };
    // pid: reaped; -1 (ECHILD): not our child any more; 0: still running.
    r != 0
}

/// `(pid, pgid)` of this process's adopted children (see [`end_adopted`]), zombies included.
fn adopted(jobs: &[u32]) -> Vec<(i32, i32)> {
    let me = std::process::id() as i32;
    // SAFETY: getpgrp has no arguments and cannot fail.
    let my_group = unsafe { libc::getpgrp() };
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| !jobs.contains(&(pid as u32)))
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // After the command's `)`: state, ppid, pgrp.
            let (_, rest) = stat.rsplit_once(')')?;
            let mut f = rest.split_whitespace().skip(1);
            let ppid: i32 = f.next()?.parse().ok()?;
            let pgrp: i32 = f.next()?.parse().ok()?;
            (ppid == me && pgrp != my_group).then_some((pid, pgrp))
        })
        .collect()
}

/// SIGKILLs every process whose environment holds `JOB_ENV=marker` (this user's processes:
/// /proc/<pid>/environ of others cannot be read), again until none is left — a process may
/// fork while the sweep runs.
fn kill_marked(marker: &str) {
    let needle = format!("{JOB_ENV}={marker}");
    for _ in 0..50 {
        let found = marked_processes(needle.as_bytes());
        if found.is_empty() {
            return;
        }
        for pid in found {
            let _ = kill_process(pid, Signal::KILL);
        }
        std::thread::sleep(POLL);
    }
    tracing::warn!("processes marked {needle} are still alive after 50 rounds of SIGKILL");
}

/// The live processes whose initial environment contains `needle` as one entry.
fn marked_processes(needle: &[u8]) -> Vec<Pid> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me && !is_zombie(pid))
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|entry| entry == needle))
        })
        .filter_map(|pid| Pid::from_raw(pid as i32))
        .collect()
}

/// A zombie keeps its environ until reaped, but is already dead: killing it again is useless.
fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// `d` from now; `None` (never) when that is past what the clock can represent.
fn after(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

fn passed(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

fn wait_until(child: &mut Child, deadline: Option<Instant>) -> Option<std::process::ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if passed(deadline) => return None,
            Ok(None) => std::thread::sleep(POLL),
            Err(_) => return None,
        }
    }
}

fn signal_group(pgid: Option<Pid>, signal: Signal) {
    if let Some(pgid) = pgid {
        // ESRCH (nothing left in the group) is the normal case after a clean exit.
        let _ = kill_process_group(pgid, signal);
    }
}

fn exit_outcome(status: std::process::ExitStatus) -> RunOutcome {
    match (status.code(), status.signal()) {
        (Some(code), _) => RunOutcome::Exited { code },
        (None, Some(signal)) => RunOutcome::Signalled { signal },
        (None, None) => RunOutcome::Exited { code: -1 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gone(pid: u32) -> bool {
        // Dead, or a zombie waiting for a parent that is not us.
        !Path::new(&format!("/proc/{pid}")).exists() || is_zombie(pid)
    }

    fn read_pid(path: &Path) -> u32 {
        for _ in 0..250 {
            if let Some(pid) = std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                return pid;
            }
            std::thread::sleep(POLL);
        }
        panic!("{} was never written", path.display());
    }

    /// Issue #28: a command that detaches a process with `setsid` (new session, new group)
    /// left it running after the check; the marker finds it.
    #[test]
    fn a_process_detached_with_setsid_does_not_outlive_the_job() {
        let tmp = tempfile::tempdir().unwrap();
        let pid_file = tmp.path().join("pid");
        let outcome = run_command(
            &format!(
                "setsid sh -c 'echo $$ > \"{}\"; exec sleep 300' & sleep 0.5; exit 0",
                pid_file.display()
            ),
            tmp.path(),
            Duration::from_secs(60),
            &tmp.path().join("console.log"),
            &[],
            Duration::from_secs(1),
            &AtomicBool::new(false),
        );
        assert_eq!(outcome, RunOutcome::Exited { code: 0 });
        let pid = read_pid(&pid_file);
        for _ in 0..100 {
            if gone(pid) {
                return;
            }
            std::thread::sleep(POLL);
        }
        panic!("the setsid'ed sleep {pid} outlived the job");
    }

    #[test]
    fn a_timed_out_job_is_stopped_with_what_it_started() {
        let tmp = tempfile::tempdir().unwrap();
        let pid_file = tmp.path().join("pid");
        let outcome = run_command(
            &format!("sleep 300 & echo $! > \"{}\"; wait", pid_file.display()),
            tmp.path(),
            Duration::from_millis(500),
            &tmp.path().join("console.log"),
            &[],
            Duration::from_millis(200),
            &AtomicBool::new(false),
        );
        assert_eq!(outcome, RunOutcome::TimedOut);
        let pid = read_pid(&pid_file);
        assert!(
            gone(pid),
            "the background sleep {pid} outlived the timed-out job"
        );
    }

    /// The pids of live processes whose command line is `sleep <arg>`.
    pub(crate) fn sleeping(arg: &str) -> Vec<u32> {
        let want = format!("sleep\0{arg}\0");
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.ends_with(want.as_bytes()) && !is_zombie(*pid))
            })
            .collect()
    }

    /// Issue #38 E15: a daemon that clears its environment (so it carries no job marker) and
    /// leaves the job's group and session outlived the job; this process adopts it as a
    /// child subreaper and ends it when the job ends.
    #[test]
    fn a_daemon_that_clears_its_environment_does_not_outlive_the_job() {
        let tmp = tempfile::tempdir().unwrap();
        let arg = format!("1000.{}7", std::process::id());
        let outcome = run_command(
            &format!("env -i setsid sleep {arg} & sleep 0.3; exit 0"),
            tmp.path(),
            Duration::from_secs(60),
            &tmp.path().join("console.log"),
            &[],
            Duration::from_secs(1),
            &AtomicBool::new(false),
        );
        assert_eq!(outcome, RunOutcome::Exited { code: 0 });
        let left = sleeping(&arg);
        for &pid in &left {
            let _ = kill_process(Pid::from_raw(pid as i32).unwrap(), Signal::KILL);
        }
        assert!(
            left.is_empty(),
            "`env -i setsid sleep {arg}` outlived the job: {left:?}"
        );
        assert!(become_subreaper(), "this process is a child subreaper");
    }

    #[test]
    fn a_job_marker_is_unique_per_job() {
        assert_ne!(job_marker(), job_marker());
    }
}
