//! Data-parallel communication on libtorch's own c10d (through csrc/dist.cpp): the
//! `TCPStore` rendezvous, a process group per device — `ProcessGroupGloo` on the CPU, a c10d
//! `Backend` over the dlopen'ed TCCL on SDAA, `ProcessGroupNCCL` on CUDA (from the NCCL shim,
//! [`crate::nccl`], loaded only then) — and `c10d::Reducer`, the bucketed gradient reducer
//! `torch.nn.parallel.DistributedDataParallel` runs on. No collective is written here.

use std::ffi::{c_void, CString};
use std::os::raw::{c_char, c_int};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

use tch::Tensor;
use torch_sys::C_tensor;

use crate::bindings as b;
use crate::shim::{self, DEVICE_TYPE_PRIVATEUSE1};
use crate::spec::DeviceKind;
use crate::tccl::{self, Communicator, UniqueId};
use crate::Device;

#[repr(C)]
struct MzdStore {
    _private: [u8; 0],
}
#[repr(C)]
struct MzdGroup {
    _private: [u8; 0],
}
#[repr(C)]
struct MzdReducer {
    _private: [u8; 0],
}

/// The NCCL-shaped calls the C++ backend makes (csrc/dist.cpp `MzdCclApi`).
#[repr(C)]
struct MzdCclApi {
    all_reduce: b::tcclAllReduce,
    broadcast: b::tcclBroadcast,
    error_string: b::tcclGetErrorString,
}

extern "C" {
    fn mzd_store_open(
        host: *const c_char,
        port: c_int,
        is_server: c_int,
        timeout_ms: i64,
        prefix: *const c_char,
        out: *mut *mut MzdStore,
    ) -> *mut c_char;
    fn mzd_store_free(s: *mut MzdStore);
    fn mzd_set_cpp_log_level(level: c_int);
    fn mzd_store_set(
        s: *mut MzdStore,
        key: *const c_char,
        data: *const u8,
        len: usize,
    ) -> *mut c_char;
    fn mzd_store_get(
        s: *mut MzdStore,
        key: *const c_char,
        data: *mut *mut u8,
        len: *mut usize,
    ) -> *mut c_char;
    fn mzd_store_add(
        s: *mut MzdStore,
        key: *const c_char,
        delta: i64,
        out: *mut i64,
    ) -> *mut c_char;
    fn mzd_store_check(s: *mut MzdStore, key: *const c_char, present: *mut c_int) -> *mut c_char;
    fn mzd_have_gloo() -> c_int;
    fn mzd_group_gloo(
        s: *mut MzdStore,
        rank: c_int,
        size: c_int,
        timeout_ms: i64,
        hostname: *const c_char,
        interface: *const c_char,
        out: *mut *mut MzdGroup,
    ) -> *mut c_char;
    fn mzd_group_ccl(
        s: *mut MzdStore,
        rank: c_int,
        size: c_int,
        api: *const MzdCclApi,
        comm: *mut c_void,
        device_type: c_int,
        name: *const c_char,
        out: *mut *mut MzdGroup,
    ) -> *mut c_char;
    fn mzd_group_free(g: *mut MzdGroup);
    fn mzd_group_clone(g: *mut MzdGroup, out: *mut *mut MzdGroup) -> *mut c_char;
    #[allow(clippy::too_many_arguments)]
    fn mzd_sync_batch_norm(
        g: *mut MzdGroup,
        x: *const C_tensor,
        weight: *const C_tensor,
        bias: *const C_tensor,
        running_mean: *mut C_tensor,
        running_var: *mut C_tensor,
        momentum: f64,
        eps: f64,
        out: *mut *mut C_tensor,
    ) -> *mut c_char;
    fn mzd_group_allreduce(
        g: *mut MzdGroup,
        ts: *const *mut C_tensor,
        n: usize,
        op: c_int,
    ) -> *mut c_char;
    fn mzd_group_broadcast_coalesced(
        g: *mut MzdGroup,
        ts: *const *mut C_tensor,
        n: usize,
        root: c_int,
    ) -> *mut c_char;
    fn mzd_reducer_new(
        g: *mut MzdGroup,
        params: *const *mut C_tensor,
        names: *const *const c_char,
        n: usize,
        cap_bytes: i64,
        first_cap_bytes: i64,
        out: *mut *mut MzdReducer,
    ) -> *mut c_char;
    fn mzd_reducer_before_forward(r: *mut MzdReducer) -> *mut c_char;
    fn mzd_reducer_before_backward(r: *mut MzdReducer) -> *mut c_char;
    fn mzd_reducer_free(r: *mut MzdReducer);
}

/// A distributed-communication failure, with what a user needs to act on it.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// Serving the store: the port is taken.
    #[error("cannot serve the rendezvous store on port {port}: the port is already in use (another job, or a node started twice?); pick a free one with --master_port")]
    PortInUse { port: u16 },
    /// The store's host name does not resolve to an address (a typo in `--master_addr`, or
    /// no DNS): said at once instead of retrying until the timeout as if it were unreachable.
    #[error("cannot resolve host {host:?}: {message}; check --master_addr (the rank-0 node's host name or IP address)")]
    Resolve { host: String, message: String },
    /// Serving or reaching the store failed otherwise.
    #[error("rendezvous store {addr}:{port}: {message}")]
    Store {
        addr: String,
        port: u16,
        message: String,
    },
    /// A process group could not be created or a collective failed.
    #[error("{backend} process group (rank {rank} of {size}): {message}")]
    Group {
        backend: &'static str,
        rank: usize,
        size: usize,
        message: String,
    },
    /// Something this build or device cannot do.
    #[error("{0}")]
    Unsupported(String),
}

/// A reduction for [`ProcessGroup::all_reduce`] (c10d / NCCL numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum = 0,
    Product = 1,
    Max = 2,
    Min = 3,
    Avg = 4,
}

fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

/// The error a shim call returned, if any. c10d's exceptions carry their C++ stack after the
/// first line; callers show the first line, the whole text goes to the debug log.
fn error_text(err: *mut c_char) -> Option<String> {
    let text = (!err.is_null()).then(|| shim::take_string(err))?;
    if text.trim_end().contains('\n') {
        tracing::debug!("c10d error, full text:\n{text}");
    }
    Some(text)
}

/// c10d logs through c10's own logger straight to stderr — connection retries, and a failed
/// rendezvous's ~40 C++ stack frames ahead of the one-line error we print. Route it to our
/// debug level: shown only when `tracing` has debug enabled (`RUST_LOG=debug`), or as the
/// user set `TORCH_CPP_LOG_LEVEL` (c10's own switch, then left alone).
fn quiet_cpp_logging() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("TORCH_CPP_LOG_LEVEL").is_some() {
            return;
        }
        let level = if tracing::enabled!(tracing::Level::DEBUG) {
            0
        } else {
            3
        };
        // SAFETY: sets an int flag; no other state.
        unsafe { mzd_set_cpp_log_level(level) }
    });
}

fn millis(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// c10d's `TCPStore`: the key-value store ranks rendezvous on. One process serves it
/// (torchrun's agent, or rank 0); everyone else connects. Thread-safe.
pub struct Store {
    raw: NonNull<MzdStore>,
    addr: String,
    port: u16,
}

// SAFETY: c10d's TCPStore serialises its socket use internally.
unsafe impl Send for Store {}
unsafe impl Sync for Store {}

impl Store {
    /// Serve the store on `port` (all interfaces); fails at once if the port is taken.
    pub fn serve(
        addr: &str,
        port: u16,
        timeout: Duration,
        prefix: &str,
    ) -> Result<Store, DistError> {
        Self::open(addr, port, true, timeout, prefix)
    }

    /// Connect to the store at `addr:port`, retrying until `timeout`.
    pub fn connect(
        addr: &str,
        port: u16,
        timeout: Duration,
        prefix: &str,
    ) -> Result<Store, DistError> {
        Self::open(addr, port, false, timeout, prefix)
    }

    fn open(
        addr: &str,
        port: u16,
        server: bool,
        timeout: Duration,
        prefix: &str,
    ) -> Result<Store, DistError> {
        // Serving or connecting, c10d connects to addr:port; a name that does not resolve would
        // be retried until the timeout and then reported as unreachable.
        if let Err(e) = std::net::ToSocketAddrs::to_socket_addrs(&(addr, port)) {
            return Err(DistError::Resolve {
                host: addr.to_string(),
                message: e.to_string(),
            });
        }
        quiet_cpp_logging();
        let (host, pre) = (cstring(addr), cstring(prefix));
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid C strings; `raw` receives a new store on success.
        let err = unsafe {
            mzd_store_open(
                host.as_ptr(),
                c_int::from(port),
                c_int::from(server),
                millis(timeout),
                pre.as_ptr(),
                &mut raw,
            )
        };
        if let Some(message) = error_text(err) {
            if server && (message.contains("EADDRINUSE") || message.contains("already in use")) {
                return Err(DistError::PortInUse { port });
            }
            let message = if server {
                message
            } else {
                format!(
                    "not reachable within {:.0} s ({}); is the rank-0 node running, and are --master_addr / --master_port right?",
                    timeout.as_secs_f64(),
                    first_line(&message)
                )
            };
            return Err(DistError::Store {
                addr: addr.to_string(),
                port,
                message,
            });
        }
        let raw = NonNull::new(raw).ok_or_else(|| DistError::Store {
            addr: addr.to_string(),
            port,
            message: "the shim returned no store".into(),
        })?;
        Ok(Store {
            raw,
            addr: addr.to_string(),
            port,
        })
    }

    /// `host:port` of the store.
    pub fn address(&self) -> String {
        format!("{}:{}", self.addr, self.port)
    }

    fn fail(&self, what: &str, message: String) -> DistError {
        DistError::Store {
            addr: self.addr.clone(),
            port: self.port,
            message: format!("{what}: {}", first_line(&message)),
        }
    }

    /// Set `key` to `value`.
    pub fn set(&self, key: &str, value: &[u8]) -> Result<(), DistError> {
        let k = cstring(key);
        // SAFETY: live store, valid key and buffer.
        let err =
            unsafe { mzd_store_set(self.raw.as_ptr(), k.as_ptr(), value.as_ptr(), value.len()) };
        error_text(err).map_or(Ok(()), |m| Err(self.fail(&format!("set {key}"), m)))
    }

    /// The value of `key`, waiting for it up to the store's timeout.
    pub fn get(&self, key: &str) -> Result<Vec<u8>, DistError> {
        let k = cstring(key);
        let (mut data, mut len) = (std::ptr::null_mut(), 0usize);
        // SAFETY: live store; on success `data` is a malloc'ed buffer of `len` bytes we free.
        let err = unsafe { mzd_store_get(self.raw.as_ptr(), k.as_ptr(), &mut data, &mut len) };
        if let Some(m) = error_text(err) {
            return Err(self.fail(&format!("get {key}"), m));
        }
        let out = unsafe { std::slice::from_raw_parts(data, len) }.to_vec();
        shim::free_buffer(data.cast());
        Ok(out)
    }

    /// Atomically add `delta` to the counter `key` (created at 0); returns the new value.
    pub fn add(&self, key: &str, delta: i64) -> Result<i64, DistError> {
        let k = cstring(key);
        let mut out = 0i64;
        // SAFETY: live store, valid key.
        let err = unsafe { mzd_store_add(self.raw.as_ptr(), k.as_ptr(), delta, &mut out) };
        error_text(err).map_or(Ok(out), |m| Err(self.fail(&format!("add {key}"), m)))
    }

    /// Whether `key` exists (never waits).
    pub fn check(&self, key: &str) -> Result<bool, DistError> {
        let k = cstring(key);
        let mut present: c_int = 0;
        // SAFETY: live store, valid key.
        let err = unsafe { mzd_store_check(self.raw.as_ptr(), k.as_ptr(), &mut present) };
        error_text(err).map_or(Ok(present != 0), |m| {
            Err(self.fail(&format!("check {key}"), m))
        })
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // SAFETY: we own the store.
        unsafe { mzd_store_free(self.raw.as_ptr()) }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s).trim()
}

/// Whether this build has Gloo (CPU DDP): the gloo headers were present at build time.
pub fn have_gloo() -> bool {
    // SAFETY: no arguments.
    unsafe { mzd_have_gloo() != 0 }
}

/// A c10d process group of `size` ranks for one device kind: what collectives run on.
pub struct ProcessGroup {
    raw: NonNull<MzdGroup>,
    rank: usize,
    size: usize,
    backend: &'static str,
    /// The TCCL/NCCL communicator the C++ backend calls into; outlives every handle to it.
    _comm: Option<Arc<Communicator>>,
}

// SAFETY: c10d process groups are used from one thread at a time here; they may move.
unsafe impl Send for ProcessGroup {}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ProcessGroup({}, rank {} of {})",
            self.backend, self.rank, self.size
        )
    }
}

impl ProcessGroup {
    /// The process group for `device` (see [`Device::process_group_backend`]), rendezvousing
    /// through `store`; every rank must call this. `timeout` bounds the group's setup and
    /// each collective. For Gloo, `hostname` is the address other ranks reach this one on
    /// ("" = this machine's host name); `GLOO_SOCKET_IFNAME` wins, as in PyTorch.
    pub fn new(
        device: &Device,
        store: &Store,
        rank: usize,
        size: usize,
        timeout: Duration,
        hostname: &str,
    ) -> Result<ProcessGroup, DistError> {
        let backend = device.process_group_backend();
        let fail = |message: String| DistError::Group {
            backend,
            rank,
            size,
            message,
        };
        let mut raw = std::ptr::null_mut();
        let mut comm = None;
        let err = match device.kind() {
            DeviceKind::Cpu => {
                if !have_gloo() {
                    return Err(DistError::Unsupported(
                        "DDP on the CPU needs Gloo, but this build has none: the gloo headers were missing when device-sdaa was built. Run `make setup` (installs libgloo-dev) or `apt-get install libgloo-dev`, then rebuild".into(),
                    ));
                }
                let host = cstring(hostname);
                let iface = cstring(&std::env::var("GLOO_SOCKET_IFNAME").unwrap_or_default());
                // SAFETY: live store, valid strings; `raw` receives a new group.
                unsafe {
                    mzd_group_gloo(
                        store.raw.as_ptr(),
                        rank as c_int,
                        size as c_int,
                        millis(timeout),
                        host.as_ptr(),
                        iface.as_ptr(),
                        &mut raw,
                    )
                }
            }
            DeviceKind::Sdaa => {
                let api = device
                    .tccl()
                    .ok_or_else(|| fail("the SDAA libraries are not loaded".into()))?;
                let id = if rank == 0 {
                    let id = tccl::unique_id(&api).map_err(|e| fail(e.to_string()))?;
                    store.set("tccl/unique_id", id.to_hex().as_bytes())?;
                    id
                } else {
                    let hex = store.get("tccl/unique_id")?;
                    UniqueId::from_hex(&String::from_utf8_lossy(&hex))
                        .ok_or_else(|| fail("rank 0 published a malformed TCCL unique id".into()))?
                };
                let c =
                    Communicator::init(api, &id, rank, size).map_err(|e| fail(e.to_string()))?;
                let table = MzdCclApi {
                    all_reduce: api.all_reduce,
                    broadcast: api.broadcast,
                    error_string: api.get_error_string,
                };
                let name = cstring(backend);
                // SAFETY: live store; `table` is copied by the C++ side; the communicator is
                // kept alive in `_comm` for as long as the group.
                let err = unsafe {
                    mzd_group_ccl(
                        store.raw.as_ptr(),
                        rank as c_int,
                        size as c_int,
                        &table,
                        c.raw(),
                        DEVICE_TYPE_PRIVATEUSE1,
                        name.as_ptr(),
                        &mut raw,
                    )
                };
                // Shared only by handles to this one group, which call it one at a time.
                #[allow(clippy::arc_with_non_send_sync)]
                let shared = Arc::new(c);
                comm = Some(shared);
                err
            }
            DeviceKind::Cuda => {
                return ProcessGroup::nccl(store, rank, size, timeout, device.ordinal());
            }
        };
        if let Some(m) = error_text(err) {
            return Err(fail(first_line(&m).to_string()));
        }
        let raw = NonNull::new(raw).ok_or_else(|| fail("the shim returned no group".into()))?;
        Ok(ProcessGroup {
            raw,
            rank,
            size,
            backend,
            _comm: comm,
        })
    }

    /// c10d's `ProcessGroupNCCL` (from the NCCL shim, [`crate::nccl`], loaded now with
    /// libtorch_cuda if not yet) over `store`, this rank working on CUDA device `ordinal`
    /// (made the current device). Every rank must call this. `timeout` bounds each
    /// collective (NCCL's watchdog). [`ProcessGroup::new`] calls it for a CUDA device; the
    /// error is clear, never a crash, when no CUDA GPU is visible.
    pub fn nccl(
        store: &Store,
        rank: usize,
        size: usize,
        timeout: Duration,
        ordinal: usize,
    ) -> Result<ProcessGroup, DistError> {
        let backend = "nccl";
        let fail = |message: String| DistError::Group {
            backend,
            rank,
            size,
            message,
        };
        let group_new = crate::nccl::group_new().map_err(|e| {
            DistError::Unsupported(format!(
                "DDP on CUDA needs c10d's ProcessGroupNCCL, which did not load: {e}"
            ))
        })?;
        let mut raw: *mut c_void = std::ptr::null_mut();
        // SAFETY: live store (dist.cpp's `MzdStore*`, the type the shim reads through the
        // shared csrc/handles.h); `raw` receives a dist.cpp `MzdGroup*` on success.
        let err = unsafe {
            group_new(
                store.raw.as_ptr().cast(),
                rank as c_int,
                size as c_int,
                millis(timeout),
                ordinal as c_int,
                &mut raw,
            )
        };
        if let Some(m) = error_text(err) {
            return Err(fail(first_line(&m).to_string()));
        }
        let raw = NonNull::new(raw.cast::<MzdGroup>())
            .ok_or_else(|| fail("the NCCL shim returned no group".into()))?;
        Ok(ProcessGroup {
            raw,
            rank,
            size,
            backend,
            _comm: None,
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// `gloo`, `tccl` or `nccl`.
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    fn fail(&self, message: String) -> DistError {
        DistError::Group {
            backend: self.backend,
            rank: self.rank,
            size: self.size,
            message: first_line(&message).to_string(),
        }
    }

    /// Another handle to the same group (e.g. for a model's SyncBatchNorm layers).
    pub fn try_clone(&self) -> Result<ProcessGroup, DistError> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: live group; `raw` receives a new handle sharing it.
        let err = unsafe { mzd_group_clone(self.raw.as_ptr(), &mut raw) };
        if let Some(m) = error_text(err) {
            return Err(self.fail(m));
        }
        Ok(ProcessGroup {
            raw: NonNull::new(raw).ok_or_else(|| self.fail("the shim returned no group".into()))?,
            rank: self.rank,
            size: self.size,
            backend: self.backend,
            _comm: self._comm.clone(),
        })
    }

    /// Training-mode batch norm of `x` (N, C, ...) with batch statistics over every rank's
    /// batch, as `torch.nn.SyncBatchNorm`: updates `running_mean` / `running_var` in place
    /// (momentum, unbiased variance) and is differentiable (its backward is a collective too,
    /// so every rank must run the same forward and backward).
    #[allow(clippy::too_many_arguments)]
    pub fn sync_batch_norm(
        &self,
        x: &Tensor,
        weight: &Tensor,
        bias: &Tensor,
        running_mean: &Tensor,
        running_var: &Tensor,
        momentum: f64,
        eps: f64,
    ) -> Result<Tensor, DistError> {
        let mut out: *mut C_tensor = std::ptr::null_mut();
        // SAFETY: live group and tensors; on success `out` is a new tensor we own.
        let err = unsafe {
            mzd_sync_batch_norm(
                self.raw.as_ptr(),
                x.as_ptr(),
                weight.as_ptr(),
                bias.as_ptr(),
                running_mean.as_ptr() as *mut C_tensor,
                running_var.as_ptr() as *mut C_tensor,
                momentum,
                eps,
                &mut out,
            )
        };
        if let Some(m) = error_text(err) {
            return Err(self.fail(format!("sync batch norm: {m}")));
        }
        // SAFETY: a fresh `at::Tensor*` from the shim.
        Ok(unsafe { Tensor::from_ptr(out) })
    }

    /// Reduce each tensor in place over all ranks (contiguous, on this group's device); waits.
    pub fn all_reduce(&self, tensors: &[&Tensor], op: ReduceOp) -> Result<(), DistError> {
        let ptrs: Vec<*mut C_tensor> = tensors
            .iter()
            .map(|t| t.as_ptr() as *mut C_tensor)
            .collect();
        // SAFETY: live group and tensors.
        let err = unsafe {
            mzd_group_allreduce(self.raw.as_ptr(), ptrs.as_ptr(), ptrs.len(), op as c_int)
        };
        error_text(err).map_or(Ok(()), |m| Err(self.fail(format!("allreduce: {m}"))))
    }

    /// Overwrite every tensor with rank `root`'s values, packed into a few large messages
    /// (how DDP syncs parameters and buffers at start).
    pub fn broadcast(&self, tensors: &[&Tensor], root: usize) -> Result<(), DistError> {
        let ptrs: Vec<*mut C_tensor> = tensors
            .iter()
            .map(|t| t.as_ptr() as *mut C_tensor)
            .collect();
        // SAFETY: live group and tensors.
        let err = unsafe {
            mzd_group_broadcast_coalesced(
                self.raw.as_ptr(),
                ptrs.as_ptr(),
                ptrs.len(),
                root as c_int,
            )
        };
        error_text(err).map_or(Ok(()), |m| Err(self.fail(format!("broadcast: {m}"))))
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // SAFETY: we own the group; the communicator it calls is dropped after this.
        unsafe { mzd_group_free(self.raw.as_ptr()) }
    }
}

/// `c10d::Reducer`, DDP's gradient reducer: during backward, gradients are averaged over the
/// group bucket by bucket, each bucket's allreduce starting as soon as its gradients are
/// ready, and the averages are in `.grad` when backward returns. Buckets are rebuilt after the
/// first iteration in gradient-ready order, as PyTorch DDP does.
pub struct Reducer {
    raw: NonNull<MzdReducer>,
    backend: &'static str,
}

// SAFETY: used from the training thread only; may move between threads.
unsafe impl Send for Reducer {}

impl Reducer {
    /// PyTorch DDP's default bucket caps: 25 MiB, the first bucket 1 MiB.
    pub const DEFAULT_CAP_BYTES: i64 = 25 * 1024 * 1024;
    pub const DEFAULT_FIRST_CAP_BYTES: i64 = 1024 * 1024;

    /// A reducer over `params` (name, leaf that requires grad), in module order.
    pub fn new(
        group: &ProcessGroup,
        params: &[(String, Tensor)],
        cap_bytes: i64,
    ) -> Result<Reducer, DistError> {
        let names: Vec<CString> = params.iter().map(|(n, _)| cstring(n)).collect();
        let name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let ptrs: Vec<*mut C_tensor> = params
            .iter()
            .map(|(_, t)| t.as_ptr() as *mut C_tensor)
            .collect();
        let mut raw = std::ptr::null_mut();
        // SAFETY: live group and tensors; names outlive the call (the C++ side copies them).
        let err = unsafe {
            mzd_reducer_new(
                group.raw.as_ptr(),
                ptrs.as_ptr(),
                name_ptrs.as_ptr(),
                ptrs.len(),
                cap_bytes,
                Self::DEFAULT_FIRST_CAP_BYTES.min(cap_bytes),
                &mut raw,
            )
        };
        if let Some(m) = error_text(err) {
            return Err(group.fail(format!("creating the gradient reducer: {m}")));
        }
        let raw =
            NonNull::new(raw).ok_or_else(|| group.fail("the shim returned no reducer".into()))?;
        Ok(Reducer {
            raw,
            backend: group.backend,
        })
    }

    fn check(&self, what: &str, err: *mut c_char) -> Result<(), DistError> {
        error_text(err).map_or(Ok(()), |m| {
            Err(DistError::Unsupported(format!(
                "{} gradient reducer, {what}: {}",
                self.backend,
                first_line(&m)
            )))
        })
    }

    /// Call before the forward pass of a micro-batch whose backward synchronises (the last
    /// of an accumulation window). Collective: every rank calls it on the same step.
    pub fn before_forward(&mut self) -> Result<(), DistError> {
        // SAFETY: live reducer.
        let err = unsafe { mzd_reducer_before_forward(self.raw.as_ptr()) };
        self.check("before forward", err)
    }

    /// Call between that forward and its backward: the backward then averages gradients.
    /// Backward passes without it only accumulate locally (DDP's `no_sync`).
    pub fn before_backward(&mut self) -> Result<(), DistError> {
        // SAFETY: live reducer.
        let err = unsafe { mzd_reducer_before_backward(self.raw.as_ptr()) };
        self.check("before backward", err)
    }
}

impl Drop for Reducer {
    fn drop(&mut self) {
        // SAFETY: we own the reducer (it holds its own reference to the group).
        unsafe { mzd_reducer_free(self.raw.as_ptr()) }
    }
}
