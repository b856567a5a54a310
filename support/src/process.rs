//! Running a command the tools do not trust to end on its own — a model's functional command
//! (`modelzoo ci`), a benchmark round (`modelzoo bench`), a porter's training script (`modelzoo
//! port`): in its own process group, output to a file, stopped on timeout or cancel (SIGTERM,
//! then SIGKILL after a grace period). However it ends, nothing it started outlives it: its
//! process group is killed, and so is every process that still carries the job's environment
//! marker ([`JOB_ENV`]) — background jobs, and daemons that left the group and the session with
//! `setsid`. The sweep runs on every way out of [`run`], a panic included (a guard owns the
//! child).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    let child = match command.spawn() {
        Ok(c) => c,
        Err(e) => return RunOutcome::SpawnFailed(e.to_string()),
    };
    // From here on, however this function is left, the job is stopped and the child reaped.
    let mut group = Group {
        pgid: Pid::from_raw(child.id() as i32),
        child,
        marker,
    };
    let (pgid, child) = (group.pgid, &mut group.child);
    let deadline = after(timeout);
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
            Ok(None) => std::thread::sleep(POLL),
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
}

impl Drop for Group {
    fn drop(&mut self) {
        signal_group(self.pgid, Signal::KILL);
        // Returns at once if it was already reaped (the status is kept) or has just been
        // killed.
        let _ = self.child.wait();
        kill_marked(&self.marker);
    }
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

    #[test]
    fn a_job_marker_is_unique_per_job() {
        assert_ne!(job_marker(), job_marker());
    }
}
