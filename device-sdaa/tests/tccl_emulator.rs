//! TCCL through the emulator's libtccl.so: two real processes join one communicator and
//! all-reduce / broadcast buffers larger than one exchange chunk.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use device_sdaa::sdaa::SdaaLibraries;
use device_sdaa::tccl::{self, Communicator, ReduceOp, UniqueId};

const N: usize = 1_500_000; // > one 4 MiB chunk of f32

fn libs() -> SdaaLibraries {
    let dir = common::emulator_home().join("lib64");
    match SdaaLibraries::load_from(&[dir]) {
        Ok(l) => l,
        Err(e) => panic!("{e}"),
    }
}

/// Child role: run when the parent test re-executes this binary with MZ_TCCL_RANK set.
fn child(rank: usize, id_hex: &str) {
    let id = UniqueId::from_hex(id_hex).expect("parent passes a valid id");
    let comm = Communicator::init(libs().tccl(), &id, rank, 2).expect("init");
    let mut v: Vec<f32> = (0..N)
        .map(|i| (i % 1000) as f32 * (rank as f32 + 1.0))
        .collect();
    comm.all_reduce(&mut v, ReduceOp::Sum).expect("allreduce");
    for (i, x) in v.iter().enumerate() {
        assert_eq!(
            *x,
            (i % 1000) as f32 * 3.0,
            "allreduce element {i} on rank {rank}"
        );
    }
    let mut m = vec![rank as i64 * 10 - 3; 5];
    comm.all_reduce(&mut m, ReduceOp::Max)
        .expect("allreduce max");
    assert_eq!(m, vec![7; 5]);
    let mut b: Vec<f64> = if rank == 1 {
        (0..N).map(|i| i as f64).collect()
    } else {
        vec![0.0; N]
    };
    comm.broadcast(&mut b, 1).expect("broadcast");
    assert!(
        b.iter().enumerate().all(|(i, x)| *x == i as f64),
        "broadcast on rank {rank}"
    );
    // Gradients living on the sdaa device, reduced in place.
    std::env::set_var("SDAA_HOME", common::emulator_home());
    let dev = device_sdaa::Device::open(device_sdaa::DeviceSpec {
        kind: device_sdaa::DeviceKind::Sdaa,
        index: Some(rank),
    })
    .expect("open sdaa");
    let host = tch::Tensor::arange(10, (tch::Kind::Float, tch::Device::Cpu)) * (rank as f64 + 1.0);
    let mut g = dev.to_device(&host);
    comm.all_reduce_tensor(&mut g, ReduceOp::Avg)
        .expect("allreduce tensor");
    assert!(dev.holds(&g));
    let want = tch::Tensor::arange(10, (tch::Kind::Float, tch::Device::Cpu)) * 1.5;
    assert!(
        dev.to_cpu(&g).equal(&want),
        "tensor allreduce on rank {rank}"
    );
    println!("rank {rank} ok");
}

#[test]
fn allreduce_and_broadcast_between_two_processes() {
    if let (Ok(rank), Ok(id)) = (std::env::var("MZ_TCCL_RANK"), std::env::var("MZ_TCCL_ID")) {
        child(rank.parse().unwrap(), &id);
        return;
    }
    let id = tccl::unique_id(&libs().tccl()).expect("unique id");
    let exe = std::env::current_exe().unwrap();
    let mut children: Vec<_> = (0..2)
        .map(|rank| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "allreduce_and_broadcast_between_two_processes",
                    "--nocapture",
                ])
                .env("MZ_TCCL_RANK", rank.to_string())
                .env("MZ_TCCL_ID", id.to_hex())
                .env("TCCL_EMULATOR_TIMEOUT_S", "60")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while children.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        if Instant::now() > deadline {
            for c in &mut children {
                let _ = c.kill();
            }
            panic!("TCCL children did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for (rank, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(&format!("rank {rank} ok")),
            "rank {rank} failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_missing_rank_times_out_with_an_error_not_a_hang() {
    if std::env::var("MZ_TCCL_RANK").is_ok() {
        return;
    }
    std::env::set_var("TCCL_EMULATOR_TIMEOUT_S", "1");
    let api = libs().tccl();
    let id = tccl::unique_id(&api).unwrap();
    let started = Instant::now();
    let e = match Communicator::init(api, &id, 0, 2) {
        Ok(_) => panic!("init of a 2-rank communicator with one rank succeeded"),
        Err(e) => e,
    };
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(
        e.to_string()
            .contains("timed out waiting for the other ranks"),
        "{e}"
    );
    assert!(UniqueId::from_hex("zz").is_none());
    assert_eq!(
        UniqueId::from_hex(&id.to_hex()).map(|i| i.to_hex()),
        Some(id.to_hex())
    );
}
