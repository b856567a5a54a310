//! A safe TCCL communicator over the loaded `libtccl.so` (SDAA's NCCL): the collective layer
//! under the `tccl` process group. Buffers are host-addressable SDAA memory (the emulator's
//! device memory is host memory; on hardware pass device pointers from SDAA tensors).

use std::ffi::CStr;
use std::os::raw::c_int;

use crate::bindings::{tcclComm_t, tcclUniqueId};
use crate::sdaa::TcclApi;

/// A TCCL call that failed.
#[derive(Debug, thiserror::Error)]
#[error("TCCL {call} failed with error {code}: {message}")]
pub struct TcclError {
    pub call: &'static str,
    pub code: i32,
    pub message: String,
}

/// Reduction operators (NCCL numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum = 0,
    Prod = 1,
    Max = 2,
    Min = 3,
    Avg = 4,
}

/// Element types a collective can carry.
pub trait TcclType: Copy {
    const DTYPE: c_int;
}
impl TcclType for f32 {
    const DTYPE: c_int = crate::bindings::tccl_dtype::FLOAT32;
}
impl TcclType for f64 {
    const DTYPE: c_int = crate::bindings::tccl_dtype::FLOAT64;
}
impl TcclType for i32 {
    const DTYPE: c_int = crate::bindings::tccl_dtype::INT32;
}
impl TcclType for i64 {
    const DTYPE: c_int = crate::bindings::tccl_dtype::INT64;
}

/// The unique id rank 0 creates and every rank must receive (via a store, env, file).
#[derive(Clone, Copy)]
pub struct UniqueId(pub tcclUniqueId);

impl UniqueId {
    /// The id as hex text, to pass through environment variables or a key-value store.
    pub fn to_hex(&self) -> String {
        self.0
            .internal
            .iter()
            .map(|&c| format!("{:02x}", c as u8))
            .collect()
    }

    /// Parse [`UniqueId::to_hex`] output.
    pub fn from_hex(s: &str) -> Option<UniqueId> {
        let s = s.trim();
        if s.len() != 256 {
            return None;
        }
        let mut id = tcclUniqueId { internal: [0; 128] };
        for (i, slot) in id.internal.iter_mut().enumerate() {
            *slot = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()? as _;
        }
        Some(UniqueId(id))
    }
}

fn check(api: &TcclApi, call: &'static str, code: c_int) -> Result<(), TcclError> {
    if code == 0 {
        return Ok(());
    }
    let p = unsafe { (api.get_error_string)(code) };
    let message = if p.is_null() {
        "unknown error".to_string()
    } else {
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    };
    Err(TcclError {
        call,
        code,
        message,
    })
}

/// Create a new unique id (on rank 0).
pub fn unique_id(api: &TcclApi) -> Result<UniqueId, TcclError> {
    let mut id = tcclUniqueId { internal: [0; 128] };
    check(api, "tcclGetUniqueId", unsafe {
        (api.get_unique_id)(&mut id)
    })?;
    Ok(UniqueId(id))
}

/// One rank's membership in a communicator; destroyed on drop.
pub struct Communicator {
    api: TcclApi,
    comm: tcclComm_t,
    rank: usize,
    world_size: usize,
}

// The communicator handle may move between threads (not be shared).
unsafe impl Send for Communicator {}

impl Communicator {
    /// Join the communicator `id` as `rank` of `world_size` (blocks until all ranks joined).
    pub fn init(
        api: TcclApi,
        id: &UniqueId,
        rank: usize,
        world_size: usize,
    ) -> Result<Communicator, TcclError> {
        let mut comm: tcclComm_t = std::ptr::null_mut();
        check(&api, "tcclCommInitRank", unsafe {
            (api.comm_init_rank)(&mut comm, world_size as c_int, id.0, rank as c_int)
        })?;
        Ok(Communicator {
            api,
            comm,
            rank,
            world_size,
        })
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The raw `tcclComm_t`, for the c10d backend in [`crate::dist`].
    pub(crate) fn raw(&self) -> tcclComm_t {
        self.comm
    }

    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// In-place all-reduce of `buf` across all ranks.
    pub fn all_reduce<T: TcclType>(&self, buf: &mut [T], op: ReduceOp) -> Result<(), TcclError> {
        let p = buf.as_mut_ptr().cast();
        check(&self.api, "tcclAllReduce", unsafe {
            (self.api.all_reduce)(
                p,
                p,
                buf.len(),
                T::DTYPE,
                op as c_int,
                self.comm,
                std::ptr::null_mut(),
            )
        })
    }

    /// In-place broadcast of `buf` from `root`.
    pub fn broadcast<T: TcclType>(&self, buf: &mut [T], root: usize) -> Result<(), TcclError> {
        let p = buf.as_mut_ptr().cast();
        check(&self.api, "tcclBroadcast", unsafe {
            (self.api.broadcast)(
                p,
                p,
                buf.len(),
                T::DTYPE,
                root as c_int,
                self.comm,
                std::ptr::null_mut(),
            )
        })
    }
}

/// TCCL data type of a tensor kind, if TCCL carries it.
pub fn dtype_of(kind: tch::Kind) -> Option<c_int> {
    use crate::bindings::tccl_dtype as d;
    Some(match kind {
        tch::Kind::Int8 => d::INT8,
        tch::Kind::Uint8 => d::UINT8,
        tch::Kind::Int => d::INT32,
        tch::Kind::Int64 => d::INT64,
        tch::Kind::Half => d::FLOAT16,
        tch::Kind::Float => d::FLOAT32,
        tch::Kind::Double => d::FLOAT64,
        tch::Kind::BFloat16 => d::BFLOAT16,
        _ => return None,
    })
}

impl Communicator {
    fn tensor_args(t: &tch::Tensor, call: &'static str) -> Result<(c_int, usize), TcclError> {
        let bad = |message: String| TcclError {
            call,
            code: 4,
            message,
        };
        if !t.is_contiguous() {
            return Err(bad("the tensor must be contiguous".into()));
        }
        let dtype =
            dtype_of(t.kind()).ok_or_else(|| bad(format!("unsupported dtype {:?}", t.kind())))?;
        Ok((dtype, t.numel()))
    }

    /// In-place all-reduce of a contiguous tensor on this rank's SDAA device (device memory
    /// is passed as is; the emulator's is host memory).
    pub fn all_reduce_tensor(&self, t: &mut tch::Tensor, op: ReduceOp) -> Result<(), TcclError> {
        let (dtype, n) = Self::tensor_args(t, "tcclAllReduce")?;
        let p = t.data_ptr();
        check(&self.api, "tcclAllReduce", unsafe {
            (self.api.all_reduce)(p, p, n, dtype, op as c_int, self.comm, std::ptr::null_mut())
        })
    }

    /// In-place broadcast of a contiguous tensor from `root`.
    pub fn broadcast_tensor(&self, t: &mut tch::Tensor, root: usize) -> Result<(), TcclError> {
        let (dtype, n) = Self::tensor_args(t, "tcclBroadcast")?;
        let p = t.data_ptr();
        check(&self.api, "tcclBroadcast", unsafe {
            (self.api.broadcast)(
                p,
                p,
                n,
                dtype,
                root as c_int,
                self.comm,
                std::ptr::null_mut(),
            )
        })
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        if let Err(e) = check(&self.api, "tcclCommDestroy", unsafe {
            (self.api.comm_destroy)(self.comm)
        }) {
            tracing::warn!("{e}");
        }
    }
}
