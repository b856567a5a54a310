//! `device-sdaa`: one device abstraction for CPU, CUDA and Tecorigin SDAA.
//!
//! The backend is chosen from `--device cpu | cuda[:N] | sdaa[:N]` at run time, so one set of
//! binaries runs on a CPU-only machine, an NVIDIA machine and an SDAA machine: the CUDA part of
//! libtorch and the SDAA libraries (libsdaart, libtecodnn, libtecoblas, libtccl and the torch
//! plugin) are loaded on demand.

mod spec;

pub use spec::{DeviceKind, DeviceSpec, ParseDeviceError};
