//! Emulator settings that are set but not valid are errors naming the variable, its value and
//! what is allowed — never a silent default (issue #38 F17). They travel from the emulated
//! runtime (`sdaaErrorInitializationError` and its error string) through `Device::open` as a
//! `DeviceError`, which the CLIs print before exiting non-zero. Its own test binary because the
//! settings are process-wide.

mod common;

use device_sdaa::{Device, DeviceError};

fn open_error() -> String {
    match Device::open("sdaa".parse().unwrap()) {
        Ok(_) => panic!("expected an error"),
        Err(e) => {
            assert!(matches!(e, DeviceError::SdaaCall { .. }), "{e:?}");
            e.to_string()
        }
    }
}

#[test]
fn bad_settings_name_variable_value_and_what_is_allowed() {
    common::use_emulator();
    for (var, value, allowed) in [
        ("SDAA_EMULATOR_DEVICES", "abc", "an integer from 0 to 64"),
        ("SDAA_EMULATOR_DEVICES", "65", "an integer from 0 to 64"),
        (
            "SDAA_EMULATOR_MEMORY_MB",
            "-5",
            "an integer from 1 to 1073741824",
        ),
        (
            "SDAA_EMULATOR_MEMORY_MB",
            "16G",
            "an integer from 1 to 1073741824",
        ),
        (
            "SDAA_VISIBLE_DEVICES",
            "0,x",
            "device indices separated by commas",
        ),
    ] {
        std::env::set_var(var, value);
        let e = open_error();
        std::env::remove_var(var);
        assert!(
            e.contains(&format!("{var}='{value}' is not valid")) && e.contains(allowed),
            "{var}={value}: {e}"
        );
    }
    // `modelzoo env` reports the reason instead of a device count.
    std::env::set_var("SDAA_EMULATOR_DEVICES", "two");
    let report = device_sdaa::env_report(&device_sdaa::OpenOptions::default());
    std::env::remove_var("SDAA_EMULATOR_DEVICES");
    assert_eq!(report.sdaa_device_count, None);
    let e = report.sdaa_error.unwrap_or_default();
    assert!(
        e.contains("SDAA_EMULATOR_DEVICES='two' is not valid"),
        "{e}"
    );
    // Valid again: the same process opens the device (nothing was cached from the bad values).
    let d = Device::open("sdaa:1".parse().unwrap()).unwrap();
    assert_eq!(d.memory_info().unwrap().total, 16384 << 20);
    // An index list written for a bigger machine is not an error: it ends where the devices do,
    // as CUDA_VISIBLE_DEVICES does.
    std::env::set_var("SDAA_VISIBLE_DEVICES", "1,0,5");
    assert_eq!(Device::device_count(device_sdaa::DeviceKind::Sdaa), 2);
    std::env::remove_var("SDAA_VISIBLE_DEVICES");

    // TCCL's timeout: a communicator is refused with the same kind of text.
    let api = device_sdaa::sdaa::SdaaLibraries::load().unwrap().tccl();
    let id = device_sdaa::tccl::unique_id(&api).unwrap();
    std::env::set_var("TCCL_EMULATOR_TIMEOUT_S", "soon");
    let e = match device_sdaa::tccl::Communicator::init(api, &id, 0, 1) {
        Ok(_) => panic!("a communicator with TCCL_EMULATOR_TIMEOUT_S=soon"),
        Err(e) => e.to_string(),
    };
    std::env::remove_var("TCCL_EMULATOR_TIMEOUT_S");
    assert!(
        e.contains("TCCL_EMULATOR_TIMEOUT_S='soon' is not valid")
            && e.contains("a number of seconds > 0"),
        "{e}"
    );
    assert!(device_sdaa::tccl::Communicator::init(api, &id, 0, 1).is_ok());
}
