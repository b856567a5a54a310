//! The emulator's memory cap (SDAA_EMULATOR_MEMORY_MB) behaves like a full card: the copy fails
//! with a clear error through `try_to_device`, nothing crashes, and freed memory comes back.
//! Its own test binary because the cap is process-wide.

mod common;

use device_sdaa::Device;
use tch::{Kind, Tensor};

#[test]
fn allocation_beyond_the_cap_is_a_clear_error() {
    common::use_emulator();
    std::env::set_var("SDAA_EMULATOR_MEMORY_MB", "1");
    let d = Device::open("sdaa".parse().unwrap()).unwrap();
    let info = d.memory_info().unwrap();
    assert_eq!(info.total, 1 << 20);
    let small = d
        .try_to_device(&Tensor::ones([1000], (Kind::Float, tch::Device::Cpu)))
        .unwrap();
    let big = Tensor::ones([1 << 19], (Kind::Float, tch::Device::Cpu)); // 2 MiB
    let e = d.try_to_device(&big).unwrap_err().to_string();
    assert!(e.contains("SDAA_EMULATOR_MEMORY_MB exceeded"), "{e}");
    assert!(e.contains("sdaa:0"), "{e}");
    // An op's output past the cap fails the same way (the convolution's output is adopted as
    // device memory, not copied).
    let img = d
        .try_to_device(&Tensor::ones(
            [1, 1, 128, 128],
            (Kind::Float, tch::Device::Cpu),
        ))
        .unwrap(); // 64 KiB
    let w = d
        .try_to_device(&Tensor::ones(
            [32, 1, 1, 1],
            (Kind::Float, tch::Device::Cpu),
        ))
        .unwrap();
    let e = img
        .f_conv2d(&w, None::<&Tensor>, [1, 1], [0, 0], [1, 1], 1) // 2 MiB
        .unwrap_err()
        .to_string();
    assert!(e.contains("SDAA_EMULATOR_MEMORY_MB exceeded"), "{e}");
    drop((small, img, w));
    assert_eq!(d.memory_info().unwrap().free, 1 << 20);
}
