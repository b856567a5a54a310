//! The NCCL shim, `libmodelzoo_nccl.so` (csrc/nccl.cpp): c10d's `ProcessGroupNCCL` for DDP on
//! CUDA. It links libtorch_cuda, which the binaries never link, so it is a shared library of
//! its own, built by build.rs and embedded here: [`load`] writes its bytes to an anonymous
//! in-memory file (or, where that cannot be mapped executable, a private cache file) and
//! dlopens it — only when a CUDA data-parallel group is asked for, after [`crate::cuda::load`]
//! has brought libtorch_cuda (and with it libc10_cuda, NCCL and the CUDA runtime) into the
//! process, so the shim's dependencies resolve to those, whatever directory they came from.
//! Carrying the binary alone to a GPU machine is enough.

use std::ffi::c_void;
use std::io::Write;
use std::os::raw::{c_char, c_int};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The shim's bytes; empty when build.rs could not build it.
const SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libmodelzoo_nccl.so"));
/// Why build.rs did not build the shim ("" when it did).
const UNAVAILABLE: &str = include_str!(concat!(env!("OUT_DIR"), "/nccl_shim_unavailable.txt"));
/// The file name the shim is loaded under (shown in /proc/self/maps).
pub const SHIM_NAME: &str = "libmodelzoo_nccl.so";

/// `mzd_nccl_group_new(store, rank, size, timeout_ms, device_index, &group) -> error`: the
/// store and group are csrc/dist.cpp's `MzdStore*` / `MzdGroup*`.
pub(crate) type GroupNew = unsafe extern "C" fn(
    store: *mut c_void,
    rank: c_int,
    size: c_int,
    timeout_ms: i64,
    device_index: c_int,
    out: *mut *mut c_void,
) -> *mut c_char;

/// Why the NCCL shim cannot be used in this process.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NcclShimError {
    /// build.rs could not build it (headers missing when device-sdaa was compiled).
    #[error("this build has no NCCL shim ({SHIM_NAME}): {0}; install what is named and rebuild")]
    NotBuilt(String),
    /// libtorch_cuda, which the shim needs loaded first, could not be loaded.
    #[error("the NCCL shim needs libtorch_cuda: {0}")]
    Cuda(String),
    /// Writing the embedded bytes somewhere loadable failed.
    #[error("cannot write the NCCL shim to {path}: {reason}")]
    Write { path: PathBuf, reason: String },
    /// dlopen refused it, or its entry point is missing.
    #[error("cannot load the NCCL shim from {path}: {reason} (this libtorch_cuda is torch {torch_version}; the shim was built against torch 2.11.0)")]
    Load {
        path: PathBuf,
        reason: String,
        torch_version: String,
    },
}

/// Whether build.rs built the shim into this binary.
pub fn built() -> bool {
    !SHIM.is_empty()
}

struct Loaded {
    path: PathBuf,
    group_new: GroupNew,
}

static LOADED: OnceLock<Result<Loaded, NcclShimError>> = OnceLock::new();

/// Load the shim once per process (loading libtorch_cuda first); returns the path it was
/// loaded from (`/proc/self/fd/N` for the in-memory copy, or the cache file).
pub fn load() -> Result<PathBuf, NcclShimError> {
    loaded().map(|l| l.path.clone())
}

/// The shim's group constructor (loading it first).
pub(crate) fn group_new() -> Result<GroupNew, NcclShimError> {
    loaded().map(|l| l.group_new)
}

fn loaded() -> Result<&'static Loaded, NcclShimError> {
    LOADED.get_or_init(open).as_ref().map_err(Clone::clone)
}

fn open() -> Result<Loaded, NcclShimError> {
    if !built() {
        return Err(NcclShimError::NotBuilt(UNAVAILABLE.trim().to_string()));
    }
    crate::cuda::load().map_err(|e| NcclShimError::Cuda(e.to_string()))?;
    // An anonymous file first: nothing on disk to clean up or to race with. Kernels or
    // sandboxes that forbid executable memfds get the cache file instead.
    let (path, lib) = match in_memory().and_then(|path| dlopen(&path).map(|lib| (path, lib))) {
        Ok(found) => found,
        Err(memfd_error) => {
            tracing::debug!("NCCL shim from memory failed ({memfd_error}); using a cache file");
            let path = cache_file()?;
            let lib = dlopen(&path)?;
            (path, lib)
        }
    };
    // SAFETY: the symbol is csrc/nccl.cpp's `mzd_nccl_group_new`, with `GroupNew`'s signature.
    let group_new = unsafe { lib.get::<GroupNew>(b"mzd_nccl_group_new\0") }
        .map(|s| *s)
        .map_err(|e| NcclShimError::Load {
            path: path.clone(),
            reason: format!("symbol mzd_nccl_group_new: {e}"),
            torch_version: crate::cuda::torch_version(),
        })?;
    // Never unloaded: process groups it creates live in its code.
    std::mem::forget(lib);
    tracing::debug!(path = %path.display(), "loaded the NCCL shim");
    Ok(Loaded { path, group_new })
}

fn dlopen(path: &std::path::Path) -> Result<libloading::os::unix::Library, NcclShimError> {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: our own library, built against this libtorch; its initialisers only register
    // nothing beyond what libtorch_cuda (already loaded) does.
    unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }.map_err(|e| NcclShimError::Load {
        path: path.to_path_buf(),
        reason: e.to_string(),
        torch_version: crate::cuda::torch_version(),
    })
}

/// The shim in an anonymous memory file (memfd); `/proc/self/fd/N` stays valid for the
/// process (the descriptor is never closed; it is close-on-exec, so workers do not inherit it).
fn in_memory() -> Result<PathBuf, NcclShimError> {
    // SAFETY: valid C string; flags are memfd_create's.
    let fd = unsafe { libc::memfd_create(c"libmodelzoo_nccl.so".as_ptr(), libc::MFD_CLOEXEC) };
    let path = PathBuf::from(format!("/proc/self/fd/{fd}"));
    let fail = |reason: String| NcclShimError::Write {
        path: PathBuf::from(format!("memfd:{SHIM_NAME}")),
        reason,
    };
    if fd < 0 {
        return Err(fail(std::io::Error::last_os_error().to_string()));
    }
    // SAFETY: a descriptor we just created and own.
    let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // Written, the descriptor is kept open (never closed) for dlopen to map.
    file.write_all(SHIM).map_err(|e| fail(e.to_string()))?;
    std::mem::forget(file);
    Ok(path)
}

/// The shim in `$TMPDIR/modelzoo-<uid>/` (created 0700, and refused unless it is a directory
/// this user owns), named by a hash of its bytes so every build gets its own, written under a
/// temporary name and renamed into place, so ranks starting together never see half a file.
fn cache_file() -> Result<PathBuf, NcclShimError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    // SAFETY: no arguments, cannot fail.
    let uid = unsafe { libc::getuid() };
    let dir = std::env::temp_dir().join(format!("modelzoo-{uid}"));
    let fail = |path: &std::path::Path, reason: String| NcclShimError::Write {
        path: path.to_path_buf(),
        reason,
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(fail(&dir, e.to_string())),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| fail(&dir, e.to_string()))?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(fail(
            &dir,
            "exists but is not a private directory of this user; remove it or set TMPDIR".into(),
        ));
    }
    let hash = SHIM.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    let path = dir.join(format!("libmodelzoo_nccl-{hash:016x}.so"));
    if std::fs::read(&path).is_ok_and(|bytes| bytes == SHIM) {
        return Ok(path);
    }
    modelzoo_support::write_atomic(&path, SHIM).map_err(|e| fail(&path, e.to_string()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fallback for where an in-memory file cannot be mapped executable: a private cache
    /// file with the shim's exact bytes, reused when present, and loadable.
    #[test]
    fn cache_file_is_private_reused_and_loadable() {
        if !built() {
            return; // nothing to write; the integration test dist_nccl says why
        }
        use std::os::unix::fs::PermissionsExt;
        let path = cache_file().expect("cache file");
        assert_eq!(std::fs::read(&path).unwrap(), SHIM);
        let dir = path.parent().unwrap();
        let mode = std::fs::metadata(dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{} is not private", dir.display());
        assert_eq!(cache_file().unwrap(), path, "same bytes, same file");
        // A libtorch call, so this test binary maps libtorch_cpu (cuda::load looks for it).
        assert_eq!(tch::Tensor::from(2.0f32).double_value(&[]), 2.0);
        crate::cuda::load().expect("libtorch_cuda");
        let lib = dlopen(&path).expect("the cached shim loads");
        // SAFETY: only resolving the symbol, not calling it.
        assert!(unsafe { lib.get::<GroupNew>(b"mzd_nccl_group_new\0") }.is_ok());
    }
}
