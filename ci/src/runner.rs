//! Running one functional command: `sh -c` in the model directory, in its own process group,
//! output to a file, killed as a whole group on timeout (SIGTERM, then SIGKILL after a grace
//! period) so no stray process outlives the check. The group is killed on every way out of
//! [`run_command`], a panic included (a guard owns the child).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, Pid, Signal};

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    Exited {
        code: i32,
    },
    Signalled {
        signal: i32,
    },
    /// Ran past its timeout; its process group was killed.
    TimedOut,
    /// The check was interrupted (SIGINT/SIGTERM); its process group was killed.
    Interrupted,
    SpawnFailed(String),
}

const POLL: Duration = Duration::from_millis(20);

/// Runs `command` with `sh -c` in `cwd`, stdout and stderr appended to `console`, PATH
/// prefixed with `path_prefix`. Returns when it exits, or after `timeout` (or once `cancel`
/// is set) with its whole process group killed. Processes it left in its group are killed
/// either way. A timeout too large to add to the clock means no deadline (never a panic).
pub fn run_command(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    console: &Path,
    path_prefix: &[PathBuf],
    kill_grace: Duration,
    cancel: &AtomicBool,
) -> RunOutcome {
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
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        .process_group(0);
    if !path_prefix.is_empty() {
        let mut paths: Vec<PathBuf> = path_prefix.to_vec();
        if let Some(old) = std::env::var_os("PATH") {
            paths.extend(std::env::split_paths(&old));
        }
        if let Ok(joined) = std::env::join_paths(paths) {
            cmd.env("PATH", joined);
        }
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return RunOutcome::SpawnFailed(e.to_string()),
    };
    // From here on, however this function is left, the group is killed and the child reaped.
    let mut group = Group {
        pgid: Pid::from_raw(child.id() as i32),
        child,
    };
    let (pgid, child) = (group.pgid, &mut group.child);
    let deadline = after(timeout);
    let outcome = loop {
        match child.try_wait() {
            Ok(Some(status)) => break exit_outcome(status),
            Ok(None) if passed(deadline) || cancel.load(Ordering::SeqCst) => {
                let interrupted = cancel.load(Ordering::SeqCst);
                tracing::warn!(
                    command,
                    interrupted,
                    "stopping it: killing its process group"
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
    // Whatever it left running in its group (background jobs, daemons) goes too: `group`'s
    // drop.
    drop(group);
    outcome
}

/// The running command: dropping it SIGKILLs its process group and reaps the child, so no
/// exit path (an early return, a panic) leaves it running.
struct Group {
    pgid: Option<Pid>,
    child: Child,
}

impl Drop for Group {
    fn drop(&mut self) {
        signal_group(self.pgid, Signal::KILL);
        // Returns at once if it was already reaped (the status is kept) or has just been
        // killed.
        let _ = self.child.wait();
    }
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
