//! Reader benchmark: throughput on a generated 200 MB mixed log (tcap stdout lines of 4 ranks,
//! glued lines, our and tcap JSON lines, noise). Target ≥ 200 MB/s single-threaded.
//!
//! `DLLOGGER_BENCH_LOG=<path>` keeps the generated file there, so
//! scripts/bench/dllogger_bench.sh can run the ModelZoo loss.py regex loop on the same bytes;
//! `DLLOGGER_BENCH_MB` changes the size (default 200). A second case reads console output of
//! plain scripts (the loss lines of pytorch/examples' scripts, tqdm bars, noise), a fifth of
//! that size.

use std::io::{BufWriter, Write};
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// Writes about `mb` MiB of mixed log to `path`.
fn generate(path: &Path, mb: u64) -> std::io::Result<u64> {
    let mut w = BufWriter::new(std::fs::File::create(path)?);
    let target = mb << 20;
    let mut n: u64 = 0;
    let mut it: u64 = 0;
    while n < target {
        let mut chunk = String::new();
        for rank in 0..4u64 {
            let loss = 1.0 / (1.0 + it as f64) + rank as f64 / 100.0;
            let ips = 23000.0 + (it * 7 % 1000) as f64 / 3.0;
            let line = format!(
                "TCAPPDLL 2025-05-15 14:20:10.{:06} - Epoch: {} Iteration: {}  rank : {rank}  train.loss : {loss:?}  train.ips : {ips:?} imgs/s",
                it % 1_000_000,
                it / 1000,
                it % 1000
            );
            chunk.push_str(&line);
            // Every 16th pair of ranks wrote at once: glued lines.
            if !(rank == 0 && it.is_multiple_of(16)) {
                chunk.push('\n');
            }
        }
        chunk.push_str(&format!(
            "TCAPPDLL {{\"timestamp\": \"1751620651.732772\", \"datetime\": \"2025-07-04 09:17:31.732772\", \"elapsedtime\": \"6.960514\", \"type\": \"LOG\", \"step\": [0, {it}], \"data\": \"{{'rank': '0', 'train.loss': '{:?}', 'train.ips': '114.26984170566504'}}\"}}\n",
            2.0 + 1.0 / (1.0 + it as f64)
        ));
        chunk.push_str(&format!(
            "TCAPPDLL {{\"timestamp\": \"1751620651.732772\", \"datetime\": \"2025-07-04 09:17:31.732772\", \"elapsedtime\": \"6.960514\", \"type\": \"LOG\", \"step\": [0, {it}], \"data\": {{\"rank\": 0, \"train.loss\": {:?}, \"train.ips\": 7222.2195436935}}}}\n",
            3.0 + 1.0 / (1.0 + it as f64)
        ));
        chunk.push_str("W0515 14:20:08.430000 140114268497728 torch/distributed/run.py:779] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default\n");
        chunk.push_str(" TecoDNN      | 2.1.0b0 (/opt/tecoai/lib64/libtecodnn.so)\n");
        chunk.push_str("2024/01/01 12:00:00 - mmengine - INFO - Epoch(train) [1][50/500]  lr: 1.0000e-04  eta: 0:10:00  time: 0.2000  data_time: 0.0100  memory: 1024\n");
        w.write_all(chunk.as_bytes())?;
        n += chunk.len() as u64;
        it += 1;
    }
    w.flush()?;
    Ok(n)
}

/// Writes about `mb` MiB of the console output plain scripts print: per-step loss lines of
/// several shapes, evaluation lines, tqdm bars refreshed with `\r`, and noise.
fn generate_console(path: &Path, mb: u64) -> std::io::Result<u64> {
    let mut w = BufWriter::new(std::fs::File::create(path)?);
    let target = mb << 20;
    let mut n: u64 = 0;
    let mut it: u64 = 0;
    while n < target {
        let loss = 2.0 / (1.0 + it as f64 / 100.0);
        let mut chunk = format!(
            "Train Epoch: {} [{}/60000 ({:.0}%)]\tLoss: {loss:.6}\n",
            it / 1000,
            it % 1000 * 64,
            (it % 1000) as f64 / 10.0
        );
        chunk.push_str(&format!(
            "Epoch: [{}][{:4}/5005]\tTime  0.512 ( 0.530)\tData  0.011 ( 0.020)\tLoss {loss:.4e} ({loss:.4e})\tAcc@1  12.50 ( 10.20)\tAcc@5  40.62 ( 38.00)\n",
            it / 1000,
            it % 1000
        ));
        chunk.push_str(&format!(
            "[{}/25][{}/1563] Loss_D: {loss:.4} Loss_G: {:.4} D(x): 0.7012 D(G(z)): 0.2100 / 0.1800\n",
            it / 1000,
            it % 1000,
            loss * 2.0
        ));
        chunk.push_str(&format!(
            "| epoch {:3} | {:5}/ 2983 batches | lr 20.00 | ms/batch 12.34 | loss {loss:5.2} | ppl {:8.2}\n",
            it / 1000,
            it % 1000,
            loss.exp()
        ));
        for k in 0..4 {
            chunk.push_str(&format!(
                "\rEpoch 1:  {:2}%|####      | {}/1000 [00:10<00:12, 4.5it/s, loss={loss:.3}]",
                it % 100,
                it % 1000 + k
            ));
        }
        chunk.push('\n');
        chunk.push_str("W0515 14:20:08.430000 140114268497728 torch/distributed/run.py:779] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default\n");
        chunk.push_str("Downloading http://yann.lecun.com/exdb/mnist/train-images-idx3-ubyte.gz to ../data/MNIST/raw\n");
        w.write_all(chunk.as_bytes())?;
        n += chunk.len() as u64;
        it += 1;
    }
    w.flush()?;
    Ok(n)
}

fn bench(c: &mut Criterion) {
    let mb: u64 = std::env::var("DLLOGGER_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().expect("temp dir for the benchmark");
    let path = match std::env::var_os("DLLOGGER_BENCH_LOG") {
        Some(p) => p.into(),
        None => dir.path().join("mixed.log"),
    };
    let bytes = generate(&path, mb).expect("generate the mixed log");
    let mut g = c.benchmark_group("reader");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function(format!("read_mixed_{mb}MiB"), |b| {
        b.iter(|| {
            let mut r = dllogger::open(&path).expect("open the mixed log");
            let mut n = 0u64;
            let mut sum = 0.0;
            for rec in r.by_ref() {
                n += 1;
                sum += rec.get("train.loss").unwrap_or(0.0);
            }
            assert!(r.error().is_none() && n > 0 && sum > 0.0);
            n
        })
    });
    let console_mb = (mb / 5).max(1);
    let console = dir.path().join("console.log");
    let bytes = generate_console(&console, console_mb).expect("generate the console log");
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function(format!("read_console_{console_mb}MiB"), |b| {
        b.iter(|| {
            let mut r = dllogger::open(&console).expect("open the console log");
            let n = r.by_ref().count();
            assert!(r.error().is_none());
            n
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
