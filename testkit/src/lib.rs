//! What the workspace's integration tests share, one copy: a free TCP port for a
//! data-parallel job, the SDAA emulator and the venv's Python that `make` sets up, and the
//! losses a run logged, and corpus fuzzing of the parsers ([`fuzz`]). A dev-dependency only:
//! no `run_<model>` links it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod fuzz;

/// The repository root (this crate lives in `testkit/`).
pub fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// A TCP port free right now on the loopback, for a job's `--master_port`.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// The SDAA emulator install (`target/sdaa-emulator`, built by `make build`), panicking with
/// what to run when it was not built.
pub fn emulator_home() -> PathBuf {
    let home = workspace_root().join("target/sdaa-emulator");
    let plugin = home.join("lib64/libtorch_sdaa.so");
    assert!(
        plugin.is_file(),
        "SDAA emulator not built: {} is missing. Run `make build` (or scripts/build-emulator.sh) first.",
        plugin.display()
    );
    home
}

/// The Python of the project's `.venv` (torch and the reference implementations, installed by
/// scripts/setup.sh), panicking with what to run when it is missing.
pub fn venv_python() -> PathBuf {
    let py = workspace_root().join(".venv/bin/python");
    assert!(
        py.is_file(),
        "{} is missing: run `make setup` first",
        py.display()
    );
    py
}

/// A finished process's status, stdout and stderr, for assertion messages.
pub fn output_text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// (iteration, value) of `metric` in a dllogger JSON log, in file order.
pub fn series(log: &Path, metric: &str) -> Vec<(u64, f64)> {
    dllogger::open(log)
        .unwrap_or_else(|e| panic!("{}: {e}", log.display()))
        .filter_map(|r| r.get(metric).map(|v| (r.iteration.unwrap_or(0), v)))
        .collect()
}

/// Rank 0's `train.loss` per logged step, from a run's stdout (every rank prints its lines
/// there; only rank 0 writes the JSON log).
pub fn rank0_losses(stdout: &str) -> Vec<f64> {
    stdout
        .lines()
        .filter_map(|l| l.split_once("rank : 0  train.loss : "))
        .filter_map(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
        .collect()
}

/// Rank 0's `train.loss` per logged step of a training command, run with one libtorch thread,
/// warnings only and outside any launcher's environment; a run that fails panics with its
/// output.
pub fn train_losses(cmd: &mut Command) -> Vec<f64> {
    let o = cmd
        .env("OMP_NUM_THREADS", "1")
        .env("RUST_LOG", "warn")
        .env_remove("WORLD_SIZE")
        .output()
        .expect("the training command starts");
    assert!(o.status.success(), "{}", output_text(&o));
    rank0_losses(&String::from_utf8_lossy(&o.stdout))
}

/// The records of rank 0's first dumped step (`rank0/step1/records.jsonl` under `dump`) of a
/// training command run with `--dump <dump>`; a run that fails, or leaves no `meta.json` beside
/// the records, panics with its output.
pub fn step1_dump_records(cmd: &mut Command, dump: &Path) -> Vec<serde_json::Value> {
    let o = cmd
        .env("RUST_LOG", "warn")
        .output()
        .expect("the training command starts");
    assert!(o.status.success(), "{}", output_text(&o));
    let step = dump.join("rank0/step1");
    assert!(step.join("meta.json").is_file(), "{}", output_text(&o));
    let records = std::fs::read_to_string(step.join("records.jsonl"))
        .unwrap_or_else(|e| panic!("{}: {e}", step.display()));
    records
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// Asserts that loss series `b` follows `a` step for step: both `steps` long, each value within
/// relative `tol` of `a`'s. `names` name the two runs in the message.
pub fn assert_losses_follow(a: &[f64], b: &[f64], steps: usize, tol: f64, names: [&str; 2]) {
    let [na, nb] = names;
    assert_eq!(
        (a.len(), b.len()),
        (steps, steps),
        "{na}: {a:?}\n{nb}: {b:?}"
    );
    for (step, (x, y)) in a.iter().zip(b).enumerate() {
        let rel = (x - y).abs() / x.abs();
        assert!(
            rel <= tol,
            "step {}: {na} {x}, {nb} {y} (rel {rel:e})",
            step + 1
        );
    }
}

/// Copies the directory tree `src` to `dst` (created), files by content: the fresh copy of a
/// fixture project a test may write into.
pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank0_losses_reads_rank_0_lines_only() {
        let stdout =
            "TCAPPDLL 1 Epoch: 0 Iteration: 1  rank : 0  train.loss : 2.5  train.ips : 3\n\
                      TCAPPDLL 1 Epoch: 0 Iteration: 1  rank : 1  train.loss : 9.0  train.ips : 3\n\
                      TCAPPDLL 1 Epoch: 0 Iteration: 2  rank : 0  train.loss : 2.25\n";
        assert_eq!(rank0_losses(stdout), [2.5, 2.25]);
    }

    #[test]
    fn losses_follow_within_the_tolerance_only() {
        assert_losses_follow(&[2.0, 1.0], &[2.000_01, 1.0], 2, 1e-5, ["a", "b"]);
        let off = std::panic::catch_unwind(|| {
            assert_losses_follow(&[2.0, 1.0], &[2.0, 1.001], 2, 1e-5, ["a", "b"])
        });
        assert!(off.is_err(), "a step 1e-3 apart must fail");
        let short =
            std::panic::catch_unwind(|| assert_losses_follow(&[2.0], &[2.0], 2, 1e-5, ["a", "b"]));
        assert!(short.is_err(), "a run that logged fewer steps must fail");
    }

    #[test]
    fn free_ports_are_bindable() {
        let port = free_port();
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
    }
}
