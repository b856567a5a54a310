//! `--device cuda` on whatever machine runs the tests: libtorch_cuda.so is loaded on demand,
//! and the error says there is no GPU, or how many there are when the ordinal is too high.

use device_sdaa::{cuda, Device, DeviceError, DeviceKind, DeviceSpec};

#[test]
fn cuda_is_loaded_on_demand_and_errors_say_what_is_there() {
    // Before anything asks for CUDA, only the CPU part of libtorch is mapped.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(
        !maps.contains("libtorch_cuda.so"),
        "libtorch_cuda.so linked eagerly"
    );
    let cpu = Device::open(DeviceSpec::CPU).unwrap();
    assert_eq!(cpu.process_group_backend(), "gloo");
    assert_eq!(cpu.default_amp_dtype(), tch::Kind::BFloat16);
    assert!(
        cpu.memory_info().is_none(),
        "the CPU reports no device memory"
    );

    let lib_dir = cuda::libtorch_lib_dir().expect("libtorch_cpu.so is mapped");
    if !lib_dir.join("libtorch_cuda.so").is_file() {
        let e = Device::open("cuda".parse().unwrap()).unwrap_err();
        assert!(matches!(e, DeviceError::CudaLibrary { .. }), "{e}");
        let e = cuda::mem_info(0).unwrap_err();
        assert!(e.contains("libtorch_cuda.so"), "{e}");
        return;
    }
    let n = Device::device_count(DeviceKind::Cuda);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(
        maps.contains("libtorch_cuda.so"),
        "libtorch_cuda.so was not loaded on demand"
    );
    if n == 0 {
        let e = Device::open("cuda".parse().unwrap()).unwrap_err();
        assert!(e.to_string().contains("no CUDA GPU is visible"), "{e}");
        assert!(cuda::mem_info(0).is_err(), "no device, no memory figures");
    } else {
        let d = Device::open("cuda:0".parse().unwrap()).unwrap();
        let m = d
            .memory_info()
            .expect("cudaMemGetInfo through the loaded runtime");
        assert!(m.total > 0 && m.free <= m.total, "{m:?}");
        assert_eq!(d.process_group_backend(), "nccl");
        let t = d.to_device(&tch::Tensor::from_slice(&[1.0f32, 2.0]));
        assert_eq!(
            d.to_cpu(&(&t * 2.0)),
            tch::Tensor::from_slice(&[2.0f32, 4.0])
        );
        let spec = DeviceSpec {
            kind: DeviceKind::Cuda,
            index: Some(n + 6),
        };
        let e = Device::open(spec).unwrap_err();
        assert!(
            e.to_string().contains(&format!("has {n} cuda device")),
            "{e}"
        );
    }
}
