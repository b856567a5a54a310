//! The CUDA backend, loaded on demand: binaries link only libtorch_cpu, and `libtorch_cuda.so`
//! from the same libtorch directory is dlopen'ed with RTLD_GLOBAL before the first CUDA call,
//! so its static initializers register the CUDA hooks with libtorch_cpu.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::DeviceError;

/// The directory of the libtorch_cpu.so mapped into this process (from /proc/self/maps).
pub fn libtorch_lib_dir() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|p| p.ends_with("/libtorch_cpu.so"))
        .and_then(|p| Path::new(p).parent().map(Path::to_path_buf))
}

/// The libtorch version baked into the headers this crate was built with.
pub fn torch_version() -> String {
    // torch-sys does not expose the version at run time; libtorch's own is in the lib dir's
    // sibling `version.py` for a PyPI build.
    libtorch_lib_dir()
        .and_then(|d| std::fs::read_to_string(d.join("../version.py")).ok())
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("__version__ = ")
                    .map(|v| v.trim_matches(['\'', '"']).to_string())
            })
        })
        .unwrap_or_else(|| "2.11.0".to_string())
}

static LOADED: OnceLock<Result<PathBuf, (PathBuf, String)>> = OnceLock::new();

/// dlopen libtorch_cuda.so once per process; returns its path.
pub fn load() -> Result<PathBuf, DeviceError> {
    let result = LOADED.get_or_init(|| {
        let dir = match libtorch_lib_dir() {
            Some(d) => d,
            None => {
                return Err((
                    PathBuf::from("libtorch_cuda.so"),
                    "libtorch_cpu.so is not mapped in this process".to_string(),
                ))
            }
        };
        let path = dir.join("libtorch_cuda.so");
        if !path.is_file() {
            return Err((path, "no such file".to_string()));
        }
        use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
        // SAFETY: loading libtorch's own CUDA part, built for this very libtorch_cpu.
        match unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_GLOBAL) } {
            Ok(lib) => {
                // Never unloaded: its hooks stay registered for the process lifetime.
                std::mem::forget(lib);
                tracing::debug!(path = %path.display(), "loaded libtorch_cuda");
                Ok(path)
            }
            Err(e) => Err((path, e.to_string())),
        }
    });
    result
        .clone()
        .map_err(|(path, reason)| DeviceError::CudaLibrary {
            path,
            reason,
            torch_version: torch_version(),
        })
}

/// Number of CUDA devices; 0 when libtorch_cuda cannot be loaded.
pub fn device_count() -> usize {
    match load() {
        Ok(_) => tch::Cuda::device_count().max(0) as usize,
        Err(_) => 0,
    }
}

/// (free, total) bytes of CUDA device `ordinal`, from the CUDA runtime that libtorch_cuda
/// brought into the process (`cudaMemGetInfo` on that device; the calling thread's current
/// device is restored). Needs [`load`] to have succeeded. Not yet checked on a GPU machine.
pub fn mem_info(ordinal: usize) -> Result<(u64, u64), String> {
    use std::os::raw::c_int;
    type GetDevice = unsafe extern "C" fn(*mut c_int) -> c_int;
    type SetDevice = unsafe extern "C" fn(c_int) -> c_int;
    type MemGetInfo = unsafe extern "C" fn(*mut usize, *mut usize) -> c_int;
    load().map_err(|e| e.to_string())?;
    // The runtime is a dependency of libtorch_cuda, loaded RTLD_GLOBAL: look in the process.
    let this = libloading::os::unix::Library::this();
    let missing = |s: &str, e: libloading::Error| {
        format!("{s} not found in the process after loading libtorch_cuda: {e}")
    };
    // SAFETY: CUDA runtime API symbols with their documented signatures.
    unsafe {
        let get: libloading::os::unix::Symbol<GetDevice> = this
            .get(b"cudaGetDevice")
            .map_err(|e| missing("cudaGetDevice", e))?;
        let set: libloading::os::unix::Symbol<SetDevice> = this
            .get(b"cudaSetDevice")
            .map_err(|e| missing("cudaSetDevice", e))?;
        let info: libloading::os::unix::Symbol<MemGetInfo> = this
            .get(b"cudaMemGetInfo")
            .map_err(|e| missing("cudaMemGetInfo", e))?;
        let mut previous: c_int = 0;
        let had_previous = get(&mut previous) == 0;
        let code = set(ordinal as c_int);
        if code != 0 {
            return Err(format!("cudaSetDevice({ordinal}) failed with error {code}"));
        }
        let (mut free, mut total) = (0usize, 0usize);
        let code = info(&mut free, &mut total);
        if had_previous {
            set(previous);
        }
        if code != 0 {
            return Err(format!(
                "cudaMemGetInfo on cuda:{ordinal} failed with error {code}"
            ));
        }
        Ok((free as u64, total as u64))
    }
}
