//! C declarations of the SDAA software stack, in one place.
//!
//! The SDAA runtime mirrors the CUDA runtime API, TCCL mirrors NCCL, TecoDNN/TecoBLAS mirror
//! cuDNN/cuBLAS. By default the crate uses the declarations checked in below (`checked_in`),
//! written by hand from that mirror; the emulator's C headers (`emulator/include/`, the
//! emulator's ABI) declare the same API and the emulator's sources include them.
//!
//! With the cargo feature `bindgen`, build.rs runs bindgen on `$SDAA_HOME/include/*.h` and
//! the crate uses those generated declarations instead (same Rust names and types, so the rest
//! of the crate compiles unchanged). That build also checks at compile time that every
//! generated declaration has exactly the checked-in signature (`drift_check`), so a header
//! that disagrees with the checked-in API is a compile error, not a crash at run time.
//!
//! Everything is function-pointer types: the libraries are loaded at run time with
//! `libloading`, never linked.
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]

use std::os::raw::c_char;

/// Size of the buffer handed to `sdaaGetDeviceProperties`. The struct mirrors
/// `cudaDeviceProp` (whose first field is `char name[256]`); only the name is read, and the
/// buffer is far larger than any such struct so the callee never writes past it.
pub const DEVICE_PROP_BUFFER: usize = 16 * 1024;

/// Optional in every library: a human-readable version ("2.1.0b0"). Preferred over the
/// numeric one when present; the emulator's say "...-emulator".
pub type GetVersionString = unsafe extern "C" fn() -> *const c_char;

// Torch plugin — optional version symbol (the emulator's plugin exports it).
pub type torch_sdaa_version = unsafe extern "C" fn() -> *const c_char;

/// The function-pointer types of every SDK function the crate calls, written once. Type names
/// in the body resolve where the macro is invoked: in `checked_in` (default) and, with the
/// `bindgen` feature, in `drift_check` against the generated struct and scalar types.
macro_rules! sdk_function_types {
    () => {
        // libsdaart.so — runtime
        pub type sdaaGetDeviceCount = unsafe extern "C" fn(count: *mut c_int) -> sdaaError_t;
        pub type sdaaSetDevice = unsafe extern "C" fn(device: c_int) -> sdaaError_t;
        pub type sdaaGetDevice = unsafe extern "C" fn(device: *mut c_int) -> sdaaError_t;
        pub type sdaaDeviceSynchronize = unsafe extern "C" fn() -> sdaaError_t;
        pub type sdaaMemGetInfo =
            unsafe extern "C" fn(free: *mut usize, total: *mut usize) -> sdaaError_t;
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
    };
}

/// The hand-written declarations: the default build's API (no libclang needed).
#[cfg_attr(feature = "bindgen", allow(dead_code))]
mod checked_in {
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

    sdk_function_types!();
}

#[cfg(not(feature = "bindgen"))]
pub use checked_in::*;

/// Declarations generated by bindgen from `$SDAA_HOME/include` (feature `bindgen`).
#[cfg(feature = "bindgen")]
mod generated {
    #![allow(dead_code, clippy::all)]
    include!(concat!(env!("OUT_DIR"), "/sdaa_bindings.rs"));
}

#[cfg(feature = "bindgen")]
pub use generated::{
    sdaaDeviceSynchronize, sdaaDriverGetVersion, sdaaError_t, sdaaGetDevice, sdaaGetDeviceCount,
    sdaaGetDeviceProperties, sdaaGetErrorString, sdaaMemGetInfo, sdaaRuntimeGetVersion,
    sdaaSetDevice, sdaaStream_t, sdptiGetVersion, tcclAllReduce, tcclBroadcast, tcclCommDestroy,
    tcclCommInitRank, tcclComm_t, tcclGetErrorString, tcclGetUniqueId, tcclGetVersion,
    tcclResult_t, tcclUniqueId, tecoblasGetVersion, tecodnnExtGetVersion, tecodnnGetVersion,
    tecorandGetVersion,
};

/// `tcclDataType_t` values, from the generated header constants.
#[cfg(feature = "bindgen")]
pub mod tccl_dtype {
    use super::generated as g;
    pub const INT8: i32 = g::tcclInt8;
    pub const UINT8: i32 = g::tcclUint8;
    pub const INT32: i32 = g::tcclInt32;
    pub const UINT32: i32 = g::tcclUint32;
    pub const INT64: i32 = g::tcclInt64;
    pub const UINT64: i32 = g::tcclUint64;
    pub const FLOAT16: i32 = g::tcclFloat16;
    pub const FLOAT32: i32 = g::tcclFloat32;
    pub const FLOAT64: i32 = g::tcclFloat64;
    pub const BFLOAT16: i32 = g::tcclBfloat16;
}

/// `tcclRedOp_t` values, from the generated header constants.
#[cfg(feature = "bindgen")]
pub mod tccl_op {
    use super::generated as g;
    pub const SUM: i32 = g::tcclSum;
    pub const PROD: i32 = g::tcclProd;
    pub const MAX: i32 = g::tcclMax;
    pub const MIN: i32 = g::tcclMin;
    pub const AVG: i32 = g::tcclAvg;
}

/// Compile-time proof that the generated declarations are the checked-in ones: each
/// `const` below only type-checks when both sides are the same type (or equal value).
#[cfg(feature = "bindgen")]
#[allow(dead_code)]
mod drift_check {
    use super::{checked_in as c, generated as g};
    use std::os::raw::{c_char, c_int};

    /// The checked-in function types, spelled over the generated scalar and struct types.
    mod expected {
        use super::g::{sdaaError_t, sdaaStream_t, tcclComm_t, tcclResult_t, tcclUniqueId};
        use std::os::raw::{c_char, c_int, c_void};
        sdk_function_types!();
    }

    macro_rules! same_type {
        ($a:ty, $b:ty) => {
            const _: fn($a) -> $b = |x| x;
            const _: fn($b) -> $a = |x| x;
        };
    }
    // Per SDK function, a wrapper type named after it around both declarations: a drifted
    // one is a "mismatched types" error whose types name the function.
    macro_rules! same_fn {
        ($($name:ident),* $(,)?) => {
            mod signature_of { $( pub struct $name<T>(pub T); )* }
            $(
                const _: fn(signature_of::$name<expected::$name>) -> signature_of::$name<g::$name> =
                    |x| x;
            )*
        };
    }
    same_type!(c::sdaaError_t, g::sdaaError_t);
    same_type!(c::tcclResult_t, g::tcclResult_t);
    same_type!(c::tcclComm_t, g::tcclComm_t);
    same_type!(c::sdaaStream_t, g::sdaaStream_t);
    same_type!(c_int, g::tcclDataType_t);
    same_type!(c_int, g::tcclRedOp_t);
    same_fn!(
        sdaaGetDeviceCount,
        sdaaSetDevice,
        sdaaGetDevice,
        sdaaDeviceSynchronize,
        sdaaMemGetInfo,
        sdaaDriverGetVersion,
        sdaaRuntimeGetVersion,
        sdaaGetDeviceProperties,
        sdaaGetErrorString,
        tecodnnGetVersion,
        tecoblasGetVersion,
        tecodnnExtGetVersion,
        sdptiGetVersion,
        tecorandGetVersion,
        tcclGetVersion,
        tcclGetUniqueId,
        tcclCommInitRank,
        tcclAllReduce,
        tcclBroadcast,
        tcclCommDestroy,
        tcclGetErrorString,
    );
    // Every library's optional version string has the one shared type.
    same_type!(super::GetVersionString, g::sdaaDriverGetVersionString);
    same_type!(super::GetVersionString, g::sdaaRuntimeGetVersionString);
    same_type!(super::GetVersionString, g::tecodnnGetVersionString);
    same_type!(super::GetVersionString, g::tecoblasGetVersionString);
    same_type!(super::GetVersionString, g::tecodnnExtGetVersionString);
    same_type!(super::GetVersionString, g::sdptiGetVersionString);
    same_type!(super::GetVersionString, g::tecorandGetVersionString);
    same_type!(super::GetVersionString, g::tcclGetVersionString);

    // tcclUniqueId: same field, size and alignment (it is passed by value).
    const _: fn(g::tcclUniqueId) -> [c_char; 128] = |u| u.internal;
    const _: () =
        assert!(std::mem::size_of::<c::tcclUniqueId>() == std::mem::size_of::<g::tcclUniqueId>());
    const _: () =
        assert!(std::mem::align_of::<c::tcclUniqueId>() == std::mem::align_of::<g::tcclUniqueId>());

    // Enum values: the checked-in numbering is the header's.
    macro_rules! same_value {
        ($($a:path = $b:path),* $(,)?) => { $( const _: () = assert!($a == $b); )* };
    }
    same_value!(
        c::tccl_dtype::INT8 = g::tcclInt8,
        c::tccl_dtype::UINT8 = g::tcclUint8,
        c::tccl_dtype::INT32 = g::tcclInt32,
        c::tccl_dtype::UINT32 = g::tcclUint32,
        c::tccl_dtype::INT64 = g::tcclInt64,
        c::tccl_dtype::UINT64 = g::tcclUint64,
        c::tccl_dtype::FLOAT16 = g::tcclFloat16,
        c::tccl_dtype::FLOAT32 = g::tcclFloat32,
        c::tccl_dtype::FLOAT64 = g::tcclFloat64,
        c::tccl_dtype::BFLOAT16 = g::tcclBfloat16,
        c::tccl_op::SUM = g::tcclSum,
        c::tccl_op::PROD = g::tcclProd,
        c::tccl_op::MAX = g::tcclMax,
        c::tccl_op::MIN = g::tcclMin,
        c::tccl_op::AVG = g::tcclAvg,
    );
}

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
