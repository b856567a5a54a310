//! C declarations of the SDAA software stack, in one place.
//!
//! The SDAA runtime mirrors the CUDA runtime API, TCCL mirrors NCCL, TecoDNN/TecoBLAS mirror
//! cuDNN/cuBLAS. No SDK header is reachable from where this crate was written, so these are
//! written by hand from that mirror (names from the public Tecorigin documentation); the
//! emulator under `emulator/` implements exactly these. Regenerating them with `bindgen` from
//! the SDK headers is not done yet (no SDK reachable to check against; see docs/devices.md).
//!
//! Everything is function-pointer types: the libraries are loaded at run time with
//! `libloading`, never linked.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

/// `sdaaError_t`: 0 is success.
pub type sdaaError_t = c_int;
/// `tcclResult_t`: 0 is success.
pub type tcclResult_t = c_int;
/// Opaque communicator handle.
pub type tcclComm_t = *mut c_void;
/// Opaque stream handle (`sdaaStream_t`); null is the default stream.
pub type sdaaStream_t = *mut c_void;

/// `tcclUniqueId`: 128 opaque bytes, like `ncclUniqueId`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tcclUniqueId {
    pub internal: [c_char; 128],
}

/// `tcclDataType_t` values (same numbering as NCCL).
pub mod tccl_dtype {
    pub const INT8: i32 = 0;
    pub const UINT8: i32 = 1;
    pub const INT32: i32 = 2;
    pub const UINT32: i32 = 3;
    pub const INT64: i32 = 4;
    pub const UINT64: i32 = 5;
    pub const FLOAT16: i32 = 6;
    pub const FLOAT32: i32 = 7;
    pub const FLOAT64: i32 = 8;
    pub const BFLOAT16: i32 = 9;
}

/// `tcclRedOp_t` values (same numbering as NCCL).
pub mod tccl_op {
    pub const SUM: i32 = 0;
    pub const PROD: i32 = 1;
    pub const MAX: i32 = 2;
    pub const MIN: i32 = 3;
    pub const AVG: i32 = 4;
}

/// Size of the buffer handed to `sdaaGetDeviceProperties`. The struct mirrors
/// `cudaDeviceProp` (whose first field is `char name[256]`); only the name is read, and the
/// buffer is far larger than any such struct so the callee never writes past it.
pub const DEVICE_PROP_BUFFER: usize = 16 * 1024;

// libsdaart.so — runtime
pub type sdaaGetDeviceCount = unsafe extern "C" fn(count: *mut c_int) -> sdaaError_t;
pub type sdaaSetDevice = unsafe extern "C" fn(device: c_int) -> sdaaError_t;
pub type sdaaGetDevice = unsafe extern "C" fn(device: *mut c_int) -> sdaaError_t;
pub type sdaaDeviceSynchronize = unsafe extern "C" fn() -> sdaaError_t;
pub type sdaaMemGetInfo = unsafe extern "C" fn(free: *mut usize, total: *mut usize) -> sdaaError_t;
pub type sdaaDriverGetVersion = unsafe extern "C" fn(version: *mut c_int) -> sdaaError_t;
pub type sdaaRuntimeGetVersion = unsafe extern "C" fn(version: *mut c_int) -> sdaaError_t;
pub type sdaaGetDeviceProperties =
    unsafe extern "C" fn(prop: *mut c_void, device: c_int) -> sdaaError_t;
pub type sdaaGetErrorString = unsafe extern "C" fn(error: sdaaError_t) -> *const c_char;

// libtecodnn.so / libtecoblas.so / libtecodnn_ext.so — versions like cudnnGetVersion()
pub type tecodnnGetVersion = unsafe extern "C" fn() -> usize;
pub type tecoblasGetVersion = unsafe extern "C" fn() -> usize;
pub type tecodnnExtGetVersion = unsafe extern "C" fn() -> usize;
// libsdpti.so / libtecorand.so — like cuptiGetVersion / curandGetVersion
pub type sdptiGetVersion = unsafe extern "C" fn(version: *mut u32) -> c_int;
pub type tecorandGetVersion = unsafe extern "C" fn(version: *mut c_int) -> c_int;

/// Optional in every library: a human-readable version ("2.1.0b0"). Preferred over the
/// numeric one when present; the emulator's say "...-emulator".
pub type GetVersionString = unsafe extern "C" fn() -> *const c_char;

// libtccl.so — NCCL-like collectives
pub type tcclGetVersion = unsafe extern "C" fn(version: *mut c_int) -> tcclResult_t;
pub type tcclGetUniqueId = unsafe extern "C" fn(id: *mut tcclUniqueId) -> tcclResult_t;
pub type tcclCommInitRank = unsafe extern "C" fn(
    comm: *mut tcclComm_t,
    nranks: c_int,
    id: tcclUniqueId,
    rank: c_int,
) -> tcclResult_t;
pub type tcclAllReduce = unsafe extern "C" fn(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    count: usize,
    datatype: c_int,
    op: c_int,
    comm: tcclComm_t,
    stream: sdaaStream_t,
) -> tcclResult_t;
pub type tcclBroadcast = unsafe extern "C" fn(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    count: usize,
    datatype: c_int,
    root: c_int,
    comm: tcclComm_t,
    stream: sdaaStream_t,
) -> tcclResult_t;
pub type tcclCommDestroy = unsafe extern "C" fn(comm: tcclComm_t) -> tcclResult_t;
pub type tcclGetErrorString = unsafe extern "C" fn(result: tcclResult_t) -> *const c_char;

// Torch plugin — optional version symbol (the emulator's plugin exports it).
pub type torch_sdaa_version = unsafe extern "C" fn() -> *const c_char;

/// Every symbol the crate resolves, per library file name, for the bindgen check and docs.
pub const REQUIRED_SYMBOLS: &[(&str, &[&str])] = &[
    (
        "libsdaart.so",
        &[
            "sdaaGetDeviceCount",
            "sdaaSetDevice",
            "sdaaGetDevice",
            "sdaaDeviceSynchronize",
            "sdaaMemGetInfo",
            "sdaaDriverGetVersion",
            "sdaaRuntimeGetVersion",
            "sdaaGetDeviceProperties",
            "sdaaGetErrorString",
        ],
    ),
    ("libtecodnn.so", &["tecodnnGetVersion"]),
    ("libtecoblas.so", &["tecoblasGetVersion"]),
    (
        "libtccl.so",
        &[
            "tcclGetVersion",
            "tcclGetUniqueId",
            "tcclCommInitRank",
            "tcclAllReduce",
            "tcclBroadcast",
            "tcclCommDestroy",
            "tcclGetErrorString",
        ],
    ),
];
