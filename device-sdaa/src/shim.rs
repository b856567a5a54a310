//! Safe wrappers over the C++ shim (csrc/shim.cpp): what tch lacks for PrivateUse1 and
//! per-device autocast. Every C++ exception comes back as an error string.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use tch::{Kind, Tensor};
use torch_sys::C_tensor;

use crate::DeviceError;

/// `c10::DeviceType` values used here.
pub(crate) const DEVICE_TYPE_CPU: c_int = 0;
pub(crate) const DEVICE_TYPE_CUDA: c_int = 1;
pub(crate) const DEVICE_TYPE_PRIVATEUSE1: c_int = 20;

extern "C" {
    fn mzd_free_string(s: *mut c_char);
    fn mzd_to_device(
        src: *const C_tensor,
        device_type: c_int,
        index: c_int,
        non_blocking: c_int,
        out: *mut *mut C_tensor,
    ) -> *mut c_char;
    fn mzd_move_variable(var: *mut C_tensor, device_type: c_int, index: c_int) -> *mut c_char;
    fn mzd_tensor_device(
        t: *const C_tensor,
        device_type: *mut c_int,
        index: *mut c_int,
    ) -> *mut c_char;
    fn mzd_privateuse1_name(name: *mut *mut c_char) -> *mut c_char;
    fn mzd_guard_device_count(
        device_type: c_int,
        registered: *mut c_int,
        count: *mut c_int,
    ) -> *mut c_char;
    fn mzd_guard_synchronize(device_type: c_int, index: c_int) -> *mut c_char;
    fn mzd_autocast_enter(
        device_type: c_int,
        enabled: c_int,
        dtype: c_int,
        prev_enabled: *mut c_int,
        prev_dtype: *mut c_int,
    ) -> *mut c_char;
    fn mzd_autocast_exit(device_type: c_int, prev_enabled: c_int, prev_dtype: c_int)
        -> *mut c_char;
    fn mzd_autocast_is_enabled(device_type: c_int, enabled: *mut c_int) -> *mut c_char;
}

/// Takes ownership of a shim string (error or value).
pub(crate) fn take_string(s: *mut c_char) -> String {
    // SAFETY: the shim returns either null or a NUL-terminated malloc'ed string it owns.
    let out = unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
    unsafe { mzd_free_string(s) };
    out
}

/// Frees a buffer the shim malloc'ed (e.g. a store value).
pub(crate) fn free_buffer(p: *mut c_char) {
    // SAFETY: `p` came from the shim's malloc (or is null).
    unsafe { mzd_free_string(p) }
}

/// A shim call's error string (null: success) as a [`DeviceError::Torch`] naming `action`.
pub(crate) fn check(err: *mut c_char, action: &'static str) -> Result<(), DeviceError> {
    if err.is_null() {
        Ok(())
    } else {
        Err(DeviceError::Torch {
            action,
            message: take_string(err),
        })
    }
}

pub(crate) fn to_device(
    t: &Tensor,
    device_type: c_int,
    index: usize,
    non_blocking: bool,
) -> Result<Tensor, DeviceError> {
    let mut out: *mut C_tensor = std::ptr::null_mut();
    // SAFETY: `t.as_ptr()` is a live `at::Tensor*`; on success `out` is a new one we own.
    let err = unsafe {
        mzd_to_device(
            t.as_ptr(),
            device_type,
            index as c_int,
            non_blocking.into(),
            &mut out,
        )
    };
    check(err, "moving a tensor between devices")?;
    Ok(unsafe { Tensor::from_ptr(out) })
}

/// Move a variable's data to a device in place (keeps requires_grad and every handle).
pub(crate) fn move_variable(
    var: &Tensor,
    device_type: c_int,
    index: usize,
) -> Result<(), DeviceError> {
    // SAFETY: `var.as_ptr()` is a live `at::Tensor*`; the shim mutates its TensorImpl only.
    let err =
        unsafe { mzd_move_variable(var.as_ptr() as *mut C_tensor, device_type, index as c_int) };
    check(err, "moving a variable to the device")
}

/// (c10::DeviceType, index or -1) of a tensor.
pub(crate) fn tensor_device(t: &Tensor) -> Result<(c_int, c_int), DeviceError> {
    let (mut ty, mut idx) = (0, 0);
    let err = unsafe { mzd_tensor_device(t.as_ptr(), &mut ty, &mut idx) };
    check(err, "reading a tensor's device")?;
    Ok((ty, idx))
}

pub(crate) fn privateuse1_name() -> Result<String, DeviceError> {
    let mut name: *mut c_char = std::ptr::null_mut();
    check(
        unsafe { mzd_privateuse1_name(&mut name) },
        "reading the PrivateUse1 backend name",
    )?;
    Ok(take_string(name))
}

/// `Some(count)` when a device guard is registered for the type, else `None`.
pub(crate) fn guard_device_count(device_type: c_int) -> Result<Option<usize>, DeviceError> {
    let (mut registered, mut count) = (0, 0);
    let err = unsafe { mzd_guard_device_count(device_type, &mut registered, &mut count) };
    check(err, "querying the device guard")?;
    Ok((registered != 0).then_some(count.max(0) as usize))
}

pub(crate) fn guard_synchronize(device_type: c_int, index: usize) -> Result<(), DeviceError> {
    check(
        unsafe { mzd_guard_synchronize(device_type, index as c_int) },
        "synchronizing",
    )
}

/// `c10::ScalarType` of the floating kinds autocast accepts.
pub(crate) fn scalar_type(kind: Kind) -> c_int {
    match kind {
        Kind::Half => 5,
        Kind::Float => 6,
        Kind::Double => 7,
        Kind::BFloat16 => 15,
        // autocast rejects anything else with a clear libtorch error; Float is never wrong.
        _ => 6,
    }
}

/// Previous autocast state of one device type, restored by `autocast_exit`.
pub(crate) struct AutocastState {
    device_type: c_int,
    enabled: c_int,
    dtype: c_int,
}

pub(crate) fn autocast_enter(
    device_type: c_int,
    enabled: bool,
    kind: Kind,
) -> Result<AutocastState, DeviceError> {
    let (mut prev_enabled, mut prev_dtype) = (0, 0);
    let err = unsafe {
        mzd_autocast_enter(
            device_type,
            enabled.into(),
            scalar_type(kind),
            &mut prev_enabled,
            &mut prev_dtype,
        )
    };
    check(err, "entering autocast")?;
    Ok(AutocastState {
        device_type,
        enabled: prev_enabled,
        dtype: prev_dtype,
    })
}

pub(crate) fn autocast_exit(state: &AutocastState) -> Result<(), DeviceError> {
    check(
        unsafe { mzd_autocast_exit(state.device_type, state.enabled, state.dtype) },
        "leaving autocast",
    )
}

pub(crate) fn autocast_is_enabled(device_type: c_int) -> Result<bool, DeviceError> {
    let mut enabled = 0;
    check(
        unsafe { mzd_autocast_is_enabled(device_type, &mut enabled) },
        "reading autocast",
    )?;
    Ok(enabled != 0)
}
