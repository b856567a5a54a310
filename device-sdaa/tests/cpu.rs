//! The CPU backend through the same API the engine uses for every device.

use device_sdaa::{Device, DeviceKind, DeviceSpec};
use tch::nn::{self, Module};
use tch::{Kind, Tensor};

#[test]
fn cpu_device_moves_autocasts_and_reports() {
    let d = Device::open(" CPU ".parse().unwrap()).unwrap();
    assert_eq!(d.spec(), DeviceSpec::CPU);
    assert_eq!(
        (d.kind(), d.ordinal(), d.name()),
        (DeviceKind::Cpu, 0, "cpu".to_string())
    );
    assert_eq!(d.autocast_device_type(), "cpu");
    assert_eq!(d.process_group_backend(), "gloo");
    assert_eq!(d.memory_info(), None);
    assert_eq!(Device::device_count(DeviceKind::Cpu), 1);
    d.self_test().unwrap();

    let mut vs = nn::VarStore::new(tch::Device::Cpu);
    let conv = nn::conv2d(vs.root() / "c", 3, 4, 3, Default::default());
    d.move_var_store(&mut vs).unwrap();
    let x = d.to_device(&Tensor::randn(
        [2, 3, 8, 8],
        (Kind::Float, tch::Device::Cpu),
    ));
    assert!(d.holds(&x));
    assert!(!d.autocast_enabled());
    let y = d.autocast(true, d.default_amp_dtype(), || conv.forward(&x));
    assert_eq!(y.kind(), Kind::BFloat16);
    assert!(!d.autocast_enabled());
    // Nested: the inner disable is undone when it returns, the outer state is kept.
    d.autocast(true, Kind::BFloat16, || {
        d.autocast(false, Kind::BFloat16, || assert!(!d.autocast_enabled()));
        assert!(d.autocast_enabled());
    });
    assert_eq!(conv.forward(&x).kind(), Kind::Float);
    d.manual_seed(5);
    let a = Tensor::randn([4], (Kind::Float, tch::Device::Cpu));
    d.manual_seed(5);
    assert!(a.equal(&Tensor::randn([4], (Kind::Float, tch::Device::Cpu))));
    d.synchronize();
}
