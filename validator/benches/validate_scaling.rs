//! `modelzoo validate`'s cost against the size of its input (issue #38 C11: 4,000 imports
//! against a requirements file, or a flow-style case file of 8,000 cases, took tens of
//! seconds; 100k never finished). For n = 1k, 4k, 16k it times `Validator::check_dir` on a
//! model directory whose run script imports n modules against a requirements file of n
//! distributions, and `Validator::check_cases` on a flow-style case file of n cases; it
//! prints the median of `ROUNDS` rounds and the time per item, which stays flat when the
//! cost is linear (docs/benchmarks.md, `### validate scaling`).
//!
//! `cargo bench -p validator --bench validate_scaling`

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use validator::layout::{Options, Validator};

const SIZES: &[usize] = &[1_000, 4_000, 16_000];
const ROUNDS: usize = 5;

/// A Python model directory: `run_scripts/run_m.py` imports `n` modules, half of them
/// provided by `requirements.txt`'s `n` distributions (by name or by the part before a `_`),
/// half found nowhere (each a finding).
fn model_dir(root: &Path, n: usize) -> std::path::PathBuf {
    let d = root.join(format!("imports{n}"));
    fs::create_dir_all(d.join("run_scripts")).unwrap();
    fs::write(d.join("README.md"), "# M\n").unwrap();
    let req: String = (0..n).map(|i| format!("dist_{i}_x=={i}\n")).collect();
    fs::write(d.join("requirements.txt"), req).unwrap();
    let imports: String = (0..n)
        .map(|i| {
            if i % 2 == 0 {
                format!("import dist_{i}\n")
            } else {
                format!("import missing{i}\n")
            }
        })
        .collect();
    fs::write(d.join("run_scripts/run_m.py"), imports).unwrap();
    d
}

/// A zoo root with one model directory and a flow-style case file of `n` cases, one a line.
fn case_file(root: &Path, n: usize) -> std::path::PathBuf {
    let zoo = root.join(format!("zoo{n}"));
    let run = zoo.join("PyTorch/contrib/Demo/run_scripts");
    fs::create_dir_all(&run).unwrap();
    fs::write(run.join("run_demo.py"), "\n").unwrap();
    let dir = zoo.join("PyTorch/contrib/model_config");
    fs::create_dir_all(&dir).unwrap();
    let items: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "{{case_name: c{i}, desc: {{run_dir: PyTorch/contrib/Demo, run_file: run_scripts/run_demo.py}}, \
                 params: {{nnodes: 1, nproc_per_node: 1, batch_size: 32, model_name: m, dataset_path: /d, \
                 step: 10, epoch: 1, lr: 0.1, device: sdaa, autocast: True}}}}"
            )
        })
        .collect();
    let file = dir.join("model.yaml");
    fs::write(&file, format!("[\n{}\n]\n", items.join(",\n"))).unwrap();
    file
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn time(rounds: usize, mut f: impl FnMut()) -> Duration {
    median(
        (0..rounds)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn main() {
    // `cargo test --benches` runs this once as a smoke test: keep it to the smallest size.
    let quick = std::env::args().any(|a| a == "--test");
    let sizes = if quick { &SIZES[..1] } else { SIZES };
    let rounds = if quick { 1 } else { ROUNDS };
    let tmp = tempfile::tempdir().unwrap();
    println!("median of {rounds} round(s)");
    println!("| input | n | time | per item |");
    println!("|---|---|---|---|");
    for &n in sizes {
        let dir = model_dir(tmp.path(), n);
        let t = time(rounds, || {
            let report = Validator::new(&Options::default())
                .unwrap()
                .with_review(true)
                .check_dir(&dir)
                .unwrap();
            assert!(
                report.findings.len() >= n / 2,
                "every missing import is found"
            );
        });
        row("imports against requirements.txt", n, t);
    }
    for &n in sizes {
        let file = case_file(tmp.path(), n);
        let t = time(rounds, || {
            let report = Validator::new(&Options::default())
                .unwrap()
                .with_review(true)
                .check_cases(&file)
                .unwrap();
            assert!(report.findings.is_empty(), "{:?}", report.findings.first());
        });
        row("flow-style case file", n, t);
    }
}

fn row(what: &str, n: usize, t: Duration) {
    println!(
        "| {what} | {n} | {:.1} ms | {:.2} µs |",
        t.as_secs_f64() * 1e3,
        t.as_secs_f64() * 1e6 / n as f64
    );
}
