//! Writer benchmark: one `log` of 4 metrics to the JSON file backend (target ≤ 2 µs median).
//! The Python tcap_dllogger reference: scripts/bench/dllogger_writer_ref.py; both are run
//! side by side by scripts/bench/dllogger_bench.sh.

use criterion::{criterion_group, criterion_main, Criterion};
use dllogger::{JsonStreamBackend, Logger, Metadata, StdOutBackend, Verbosity};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir for the benchmark");
    let path = dir.path().join("bench.json");
    let backend = JsonStreamBackend::create(Verbosity::Verbose, &path).expect("JSON log");
    let mut log = Logger::new(vec![Box::new(backend)]);
    log.metadata("train.ips", Metadata::new().with_unit("imgs/s"));
    let mut i: u64 = 0;
    c.bench_function("log_4_metrics_json_file", |b| {
        b.iter(|| {
            i += 1;
            let loss = 1.0 / (1.0 + i as f64);
            log.log(
                (i / 1000, i % 1000),
                &[
                    ("train.loss", loss.into()),
                    ("train.ips", (23350.335421016007 + loss).into()),
                    ("train.lr", 0.1f64.into()),
                    ("train.total_time", (i as f64 * 0.0125).into()),
                ],
                Verbosity::Default,
            );
        })
    });
    log.flush();
    // The Python reference's exact workload: 100k logs of the same values to a fresh file.
    let mut g = c.benchmark_group("writer_100k");
    g.sample_size(10);
    g.bench_function("log_100k_json_file", |b| {
        b.iter(|| {
            let backend = JsonStreamBackend::create(Verbosity::Verbose, &path).expect("JSON log");
            let mut log = Logger::new(vec![Box::new(backend)]).with_rank(None);
            for i in 0..100_000u64 {
                let loss = 1.0 / (1.0 + i as f64);
                log.log(
                    (i / 1000, i % 1000),
                    &[
                        ("train.loss", loss.into()),
                        ("train.ips", (23350.335421016007 + loss).into()),
                        ("train.lr", 0.1f64.into()),
                        ("train.total_time", (i as f64 * 0.0125).into()),
                    ],
                    Verbosity::Default,
                );
            }
            log.finish().expect("JSON log written");
        })
    });
    g.finish();
    // The JSON line built and buffered, but written to a sink: the cost without file I/O.
    let mut js = Logger::new(vec![Box::new(JsonStreamBackend::with_writer(
        Verbosity::Verbose,
        Box::new(std::io::sink()),
    ))]);
    c.bench_function("log_4_metrics_json_to_sink", |b| {
        b.iter(|| {
            i += 1;
            js.log(
                (0, i),
                &[
                    ("train.loss", (1.0 / (1.0 + i as f64)).into()),
                    ("train.ips", 23350.335421016007.into()),
                    ("train.lr", 0.1f64.into()),
                    ("train.total_time", (i as f64 * 0.0125).into()),
                ],
                Verbosity::Default,
            );
        })
    });
    // Same line shape to a sink, for the cost of the stdout formatting alone.
    let mut out = Logger::new(vec![Box::new(StdOutBackend::with_writer(
        Verbosity::Default,
        Box::new(std::io::sink()),
    ))]);
    out.metadata("train.ips", Metadata::new().with_unit("imgs/s"));
    c.bench_function("log_4_metrics_stdout_format_to_sink", |b| {
        b.iter(|| {
            i += 1;
            out.log(
                (0, i),
                &[
                    ("train.loss", (1.0 / (1.0 + i as f64)).into()),
                    ("train.ips", 23350.335421016007.into()),
                    ("train.lr", 0.1f64.into()),
                    ("train.total_time", (i as f64 * 0.0125).into()),
                ],
                Verbosity::Default,
            );
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
