//! Issue #28: `modelzoo compare` on two 10-million-line logs held 1.26 GB although the docs
//! promised bounded memory. Memory is bounded by the steps compared (docs/compare.md states
//! the bound), not by the log bytes: two logs of 1.5 million steps, each step followed by
//! another rank's line that costs nothing, are compared with the report written, in a child
//! process whose address space is capped (`ulimit -v`) at that bound plus the process's fixed
//! cost. The old series of 40-byte points, its sort buffer and 48-byte pairs needed 3–5 times
//! more and are stopped by the cap.
//!
//! The child runs with one malloc arena (`MALLOC_ARENA_MAX=1`): glibc reserves 64 MiB of
//! address space for each thread's arena without using it, which would measure the allocator's
//! reservations instead of compare's memory.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use validator::compare::{compare_files, Options};
use validator::report;

/// Steps per log.
const STEPS: usize = 1_500_000;

/// docs/compare.md's bound for logs in step order: 8 bytes per value of each log while
/// reading (a growing buffer may hold twice that) and 16 per compared step.
const BYTES_PER_STEP: usize = 2 * 2 * 8 + 16;

/// What the child process costs with no steps at all: the test binary and its libraries, the
/// threads' stacks, the report's plots (about 15 MiB measured; twice that and more allowed).
const FIXED_MIB: usize = 48;

/// A child still running after this long is killed: near the cap, allocation can crawl
/// instead of failing.
const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

const CHILD: &str = "MODELZOO_COMPARE_MEMORY_CHILD";

fn write_log(path: &Path, scale: f64) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let mut line = String::new();
    for i in 0..STEPS {
        line.clear();
        let loss = (2.0 * (-(i as f64) / 5e5).exp() + 0.3) * scale;
        for rank in 0..2 {
            writeln!(
                line,
                "TCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: {} Iteration: {}  rank : {rank}  train.loss : {loss}  train.ips : 10415.7 imgs/s",
                i / 10_000,
                i % 10_000
            )
            .unwrap();
        }
        w.write_all(line.as_bytes()).unwrap();
    }
    w.flush().unwrap();
}

#[test]
fn comparing_millions_of_steps_stays_under_the_stated_bound() {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("cuda.log"), t.path().join("sdaa.log"));
    std::thread::scope(|s| {
        s.spawn(|| write_log(&b, 1.0));
        write_log(&c, 1.001);
    });
    let limit_kib = (FIXED_MIB << 10) + STEPS * BYTES_PER_STEP / 1024;
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {limit_kib} && exec \"$0\" \"$@\""))
        .arg(&exe)
        .args([
            "--exact",
            "child_compares_two_logs",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, t.path())
        .env("MALLOC_ARENA_MAX", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > CHILD_TIMEOUT {
            let _ = child.kill();
            panic!(
                "the comparison under a cap of {limit_kib} KiB ran past {CHILD_TIMEOUT:?}: it needs more memory than the bound"
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(&format!("steps compared {STEPS}")),
        "the comparison did not fit in {limit_kib} KiB of address space ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

/// The child of the test above (does nothing unless started by it): compares the two logs
/// and writes the report, under the parent's `ulimit -v`.
#[test]
fn child_compares_two_logs() {
    let Some(dir) = std::env::var_os(CHILD) else {
        return;
    };
    let dir = Path::new(&dir);
    let cmp = compare_files(
        &dir.join("cuda.log"),
        &dir.join("sdaa.log"),
        &Options::default(),
    )
    .unwrap();
    report::write_report(&dir.join("report"), &cmp, "modelzoo compare").unwrap();
    let text = report::text(&cmp);
    assert!(text.contains("PASS ("), "{text}");
    println!("steps compared {}", cmp.figures.steps_compared);
}
