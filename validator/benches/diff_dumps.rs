//! `validator::diff::diff` over two generated dumps holding 1 GiB of full float32 tensors
//! each (the `## diff` target in docs/benchmarks.md: ≤ 10 s). The dumps are written to a temp
//! dir at bench time (256 tensors of 1 Mi elements per dump, the candidate perturbed); the
//! library is measured without the `modelzoo` binary's start-up. `DIFF_BENCH_MIB` sets another
//! size per dump.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use validator::diff::{diff, Options};

const ELEMS: usize = 1 << 20;

fn write_dump(dir: &Path, tensors: usize, scale: f32) {
    fs::create_dir_all(dir.join("tensors")).unwrap();
    fs::write(
        dir.join("meta.json"),
        r#"{"format":"modelzoo-dump","version":1,"framework":"pytorch","model":"bench","step":1,"rank":0,"level":"op","tensors":"full","dtype":"float32","device":"cpu","torch_version":"2.11.0"}"#,
    )
    .unwrap();
    let mut records = BufWriter::new(fs::File::create(dir.join("records.jsonl")).unwrap());
    let header = {
        let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({ELEMS},), }}");
        let pad = 64 - (10 + dict.len() + 1) % 64;
        let mut h = b"\x93NUMPY\x01\x00".to_vec();
        h.extend_from_slice(&((dict.len() + pad + 1) as u16).to_le_bytes());
        h.extend_from_slice(dict.as_bytes());
        h.extend(std::iter::repeat_n(b' ', pad));
        h.push(b'\n');
        h
    };
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut data = Vec::with_capacity(ELEMS * 4);
    for t in 0..tensors {
        data.clear();
        for _ in 0..ELEMS {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let v = ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale;
            data.extend_from_slice(&v.to_le_bytes());
        }
        let file = format!("tensors/{t:06}.npy");
        let mut f = BufWriter::new(fs::File::create(dir.join(&file)).unwrap());
        f.write_all(&header).unwrap();
        f.write_all(&data).unwrap();
        writeln!(
            records,
            r#"{{"key":"aten::mul#{t}.forward.output.0","op":"aten::mul","call":{t},"phase":"forward","io":"output","index":0,"scope":"","dtype":"float32","shape":[{ELEMS}],"min":null,"max":null,"mean":null,"l2":null,"nan":0,"inf":0,"checksum":null,"file":"{file}"}}"#
        )
        .unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let mib: usize = std::env::var("DIFF_BENCH_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let tensors = (mib * (1 << 20) / (ELEMS * 4)).max(1);
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    write_dump(&a, tensors, 1.0);
    write_dump(&b, tensors, 1.0001);
    let options = Options {
        baseline: a,
        candidate: b,
        ..Options::default()
    };
    let mut group = c.benchmark_group("diff");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    group.bench_function(format!("full_f32_{mib}MiB_per_dump"), |bench| {
        bench.iter(|| {
            let d = diff(&options).unwrap();
            assert_eq!(d.totals.compared, tensors);
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
