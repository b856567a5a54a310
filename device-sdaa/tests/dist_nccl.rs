//! The NCCL shim (`libmodelzoo_nccl.so`, csrc/nccl.cpp) in real processes: built into the
//! crate, loaded after libtorch_cuda, its ProcessGroupNCCL constructor reached — which on a
//! machine without a GPU must fail with a clear error, not crash — and never mapped by a CPU
//! (Gloo) data-parallel run.

use std::process::Command;
use std::time::Duration;

use device_sdaa::dist::{DistError, ProcessGroup, ReduceOp, Reducer, Store};
use device_sdaa::{cuda, nccl, Device, DeviceKind};
use modelzoo_testkit::free_port;
use tch::{Kind, Tensor};

const TIMEOUT: Duration = Duration::from_secs(30);

fn maps() -> String {
    std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps")
}

#[test]
fn nccl_shim_loads_after_libtorch_cuda_and_its_group_fails_cleanly_without_a_gpu() {
    let lib_dir = cuda::libtorch_lib_dir().expect("libtorch_cpu.so is mapped");
    if !lib_dir.join("libtorch_cuda.so").is_file() {
        // A CPU-only libtorch: no shim can exist, and asking says why.
        let e = nccl::load().unwrap_err();
        assert!(
            matches!(e, nccl::NcclShimError::NotBuilt(_)),
            "CPU-only libtorch: {e}"
        );
        return;
    }
    assert!(
        nccl::built(),
        "libtorch_cuda.so is in {} but build.rs did not build the NCCL shim: {}",
        lib_dir.display(),
        nccl::load().unwrap_err()
    );
    assert!(!maps().contains(nccl::SHIM_NAME), "shim mapped before use");
    let path = nccl::load().expect("the NCCL shim loads once libtorch_cuda is loaded");
    let m = maps();
    assert!(
        m.contains("libtorch_cuda.so"),
        "libtorch_cuda was not loaded first"
    );
    assert!(
        m.contains(nccl::SHIM_NAME),
        "{} (loaded from {}) is not mapped",
        nccl::SHIM_NAME,
        path.display()
    );
    assert_eq!(nccl::load().unwrap(), path, "loaded once per process");

    // The entry point: ProcessGroupNCCL over a real store, one rank.
    let store = Store::serve("127.0.0.1", free_port(), TIMEOUT, "nccl-test/").expect("store");
    let gpus = Device::device_count(DeviceKind::Cuda);
    match ProcessGroup::nccl(&store, 0, 1, TIMEOUT, 0) {
        Err(e) => {
            assert_eq!(gpus, 0, "{gpus} GPU(s) visible, yet: {e}");
            assert!(
                matches!(
                    e,
                    DistError::Group {
                        backend: "nccl",
                        ..
                    }
                ),
                "{e}"
            );
            assert!(e.to_string().contains("no CUDA GPU is visible"), "{e}");
        }
        Ok(group) => {
            // Only on a machine with a GPU: a one-rank job's collectives and reducer.
            assert!(gpus > 0);
            assert_eq!(group.backend(), "nccl");
            let dev = tch::Device::Cuda(0);
            let t = Tensor::from_slice(&[1.0f32, 2.0]).to_device(dev);
            group.all_reduce(&[&t], ReduceOp::Sum).unwrap();
            group.broadcast(&[&t], 0).unwrap();
            assert_eq!(
                Vec::<f32>::try_from(&t.to_device(tch::Device::Cpu)).unwrap(),
                [1.0, 2.0]
            );
            let w = Tensor::ones([3], (Kind::Float, dev)).set_requires_grad(true);
            let mut reducer = Reducer::new(&group, &[("w".into(), w.shallow_clone())], 1 << 20)
                .expect("reducer over NCCL");
            reducer.before_forward().unwrap();
            let loss = (&w * 2.0).sum(Kind::Float);
            reducer.before_backward().unwrap();
            loss.backward();
            assert_eq!(
                Vec::<f32>::try_from(&w.grad().to_device(tch::Device::Cpu)).unwrap(),
                [2.0, 2.0, 2.0]
            );
        }
    }
}

/// CPU data parallel (store, Gloo group, reducer, a backward) in a process of its own: it
/// must load neither the NCCL shim nor libtorch_cuda.
#[test]
fn cpu_data_parallel_never_maps_the_nccl_shim() {
    if std::env::var_os("MZ_NCCL_TEST_CPU_CHILD").is_none() {
        let exe = std::env::current_exe().expect("test binary path");
        let out = Command::new(exe)
            .args([
                "cpu_data_parallel_never_maps_the_nccl_shim",
                "--exact",
                "--nocapture",
            ])
            .env("MZ_NCCL_TEST_CPU_CHILD", "1")
            .output()
            .expect("run the child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "child failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("cpu-ddp-done"),
            "child did not run: {stdout}"
        );
        return;
    }
    assert!(
        device_sdaa::dist::have_gloo(),
        "this build has no Gloo: install libgloo-dev (make setup) and rebuild"
    );
    let store = Store::serve("127.0.0.1", free_port(), TIMEOUT, "cpu-test/").expect("store");
    let group =
        ProcessGroup::new(&Device::cpu(), &store, 0, 1, TIMEOUT, "127.0.0.1").expect("gloo group");
    assert_eq!(group.backend(), "gloo");
    let w = Tensor::ones([3], (Kind::Float, tch::Device::Cpu)).set_requires_grad(true);
    let mut reducer =
        Reducer::new(&group, &[("w".into(), w.shallow_clone())], 1 << 20).expect("reducer");
    reducer.before_forward().unwrap();
    let loss = (&w * 3.0).sum(Kind::Float);
    reducer.before_backward().unwrap();
    loss.backward();
    assert_eq!(Vec::<f32>::try_from(&w.grad()).unwrap(), [3.0, 3.0, 3.0]);
    let m = maps();
    assert!(
        !m.contains("libmodelzoo_nccl"),
        "CPU DDP mapped the NCCL shim"
    );
    assert!(
        !m.contains("libtorch_cuda.so"),
        "CPU DDP loaded libtorch_cuda"
    );
    println!("cpu-ddp-done");
}
