//! Every way opening or using a device can fail, with what a user needs to fix it.

use std::path::PathBuf;

use crate::spec::DeviceKind;

/// A device failure. `Display` is the one-line message the CLI prints (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// `--device sdaa` but some required SDAA libraries were not found anywhere.
    #[error(
        "SDAA requested but {} not found; searched {} and the system library path. \
         Set SDAA_HOME (or TECO_HOME) to the SDAA SDK root containing lib64/, \
         e.g. SDAA_HOME=/opt/tecoai, or SDAA_HOME=target/sdaa-emulator for the emulator",
        missing.join(", "),
        display_dirs(searched)
    )]
    SdaaLibrariesMissing {
        missing: Vec<String>,
        searched: Vec<PathBuf>,
    },

    /// A library file exists but could not be loaded (wrong architecture, missing dependency).
    #[error("cannot load {}: {reason}", path.display())]
    LibraryLoad { path: PathBuf, reason: String },

    /// A library loaded but lacks a symbol this crate needs.
    #[error("symbol `{symbol}` not found in {}: the library is not the expected SDAA version ({reason})", file.display())]
    SymbolMissing {
        symbol: String,
        file: PathBuf,
        reason: String,
    },

    /// No torch plugin for SDAA was found.
    #[error(
        "SDAA torch plugin not found; looked for {}. Pass --sdaa_plugin <path> or set \
         SDAA_TORCH_PLUGIN to the plugin library (libtorch_sdaa.so)",
        display_dirs(searched)
    )]
    PluginMissing { searched: Vec<PathBuf> },

    /// The plugin loaded (or failed to) without registering a usable `sdaa` PrivateUse1 device.
    #[error("SDAA torch plugin {}: {reason}", path.display())]
    PluginRegistration { path: PathBuf, reason: String },

    /// An SDAA runtime call returned an error code.
    #[error("SDAA runtime call {call} failed with error {code}: {message}")]
    SdaaCall {
        call: &'static str,
        code: i32,
        message: String,
    },

    /// `cuda` requested but libtorch_cuda.so is not part of the libtorch in use.
    #[error("CUDA requested but {} could not be loaded: {reason}. This libtorch is CPU-only or incomplete; install a CUDA build of PyTorch {torch_version} or use --device cpu", path.display())]
    CudaLibrary {
        path: PathBuf,
        reason: String,
        torch_version: String,
    },

    /// The ordinal asked for does not exist (also `cuda` with zero GPUs).
    #[error("{}", no_device_message(*kind, *requested, *available))]
    NoSuchDevice {
        kind: DeviceKind,
        requested: usize,
        available: usize,
    },

    /// A libtorch operation raised a C++ exception.
    #[error("libtorch error while {action}: {message}")]
    Torch {
        action: &'static str,
        message: String,
    },
}

fn display_dirs(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "no directories".to_string();
    }
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn no_device_message(kind: DeviceKind, requested: usize, available: usize) -> String {
    match (kind, available) {
        (DeviceKind::Cuda, 0) => "CUDA requested but no CUDA GPU is visible (no NVIDIA GPU or driver on this machine, or CUDA_VISIBLE_DEVICES hides them); use --device cpu".to_string(),
        (DeviceKind::Sdaa, 0) => "SDAA requested but the SDAA runtime reports 0 devices (check the driver with teco-smi, or SDAA_VISIBLE_DEVICES)".to_string(),
        (kind, n) => format!(
            "{}:{requested} requested but this machine has {n} {} device{} (valid: {}:0..{}:{})",
            kind.as_str(),
            kind.as_str(),
            if n == 1 { "" } else { "s" },
            kind.as_str(),
            kind.as_str(),
            n - 1
        ),
    }
}
