//! Activation recompute ("gradient checkpointing") for tch, which has none: a block's forward
//! runs without keeping its activations and runs again in backward (csrc/recompute.cpp, a
//! libtorch custom autograd function; torch.utils.checkpoint's reentrant variant). A model
//! wraps each transformer block in [`checkpoint`] to trade one extra block forward per
//! backward for the block's activation memory (FleetX `Model.use_recompute`).
//!
//! What the callback must respect: it gets the block's inputs and returns its outputs; the
//! parameters it uses are captured (shallow clones of the model's variables, which are
//! leaves) and receive their gradients from the rerun. It runs twice, the second time in
//! backward (possibly on the autograd engine's thread), so it must be deterministic given its
//! inputs — pass `preserve_rng = true` when it draws random numbers (dropout): the CPU's and
//! the input device's generator states are then restored for the rerun. Outputs only get a
//! gradient path when some input requires grad (as in PyTorch's reentrant checkpoint): the
//! hidden state entering a block always does in training.

use std::ffi::c_void;
use std::os::raw::{c_char, c_int};
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;

use tch::Tensor;
use torch_sys::C_tensor;

use crate::shim::check;
use crate::DeviceError;

/// csrc/recompute.cpp's output collector.
#[repr(C)]
struct Sink {
    _private: [u8; 0],
}

type BlockFn =
    unsafe extern "C" fn(ctx: *mut c_void, inputs: *mut *mut C_tensor, n: i64, sink: *mut Sink);
type DropFn = unsafe extern "C" fn(ctx: *mut c_void);
type PushFn = unsafe extern "C" fn(list: *mut c_void, t: *const C_tensor);

extern "C" {
    fn mzd_recompute(
        inputs: *const *const C_tensor,
        n: i64,
        run: BlockFn,
        drop: DropFn,
        ctx: *mut c_void,
        preserve_rng: c_int,
        push: PushFn,
        list: *mut c_void,
    ) -> *mut c_char;
    fn mzd_recompute_push(sink: *mut Sink, t: *const C_tensor);
    fn mzd_recompute_fail(sink: *mut Sink, message: *const c_char, len: i64);
}

/// The callback as the graph owns it: called from one thread at a time (forward, then the
/// backward rerun), hence the mutex for `Sync`.
struct Block<F> {
    f: Mutex<F>,
}

unsafe extern "C" fn run_block<F>(
    ctx: *mut c_void,
    inputs: *mut *mut C_tensor,
    n: i64,
    sink: *mut Sink,
) where
    F: Fn(&[Tensor]) -> Vec<Tensor> + Send + 'static,
{
    // SAFETY: `ctx` is the Box<Block<F>> leaked by `checkpoint`, alive until `drop_block`;
    // `inputs` holds `n` new at::Tensor* whose ownership passes to us.
    let block = unsafe { &*(ctx as *const Block<F>) };
    let ins: Vec<Tensor> = (0..n as usize)
        .map(|i| unsafe { Tensor::from_ptr(*inputs.add(i)) })
        .collect();
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let f = block.f.lock().unwrap_or_else(|e| e.into_inner());
        f(&ins)
    }));
    match result {
        Ok(outs) => {
            for o in &outs {
                // SAFETY: the sink copies the at::Tensor (a reference count) before we drop ours.
                unsafe { mzd_recompute_push(sink, o.as_ptr()) };
            }
        }
        Err(payload) => {
            let text = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "the block panicked".to_string());
            // SAFETY: a valid pointer/length pair, copied by the callee.
            unsafe { mzd_recompute_fail(sink, text.as_ptr() as *const c_char, text.len() as i64) };
        }
    }
}

unsafe extern "C" fn drop_block<F>(ctx: *mut c_void) {
    // SAFETY: called once, by the C++ owner, with the pointer `checkpoint` leaked.
    drop(unsafe { Box::from_raw(ctx as *mut Block<F>) });
}

unsafe extern "C" fn push_output(list: *mut c_void, t: *const C_tensor) {
    // SAFETY: `list` is the Vec<Tensor> `checkpoint` passed; `t` a live at::Tensor* we copy
    // into a new handle (at_shallow_clone allocates one).
    let list = unsafe { &mut *(list as *mut Vec<Tensor>) };
    let owned = unsafe { torch_sys::at_shallow_clone(t as *mut C_tensor) };
    list.push(unsafe { Tensor::from_ptr(owned) });
}

/// Runs `f(inputs)` as a recomputed block: no activation inside `f` is kept for backward;
/// backward reruns `f` (with the forward's autocast state, and RNG state when
/// `preserve_rng`), then backpropagates through the rerun into the inputs and into the
/// parameters `f` captured. See the module documentation for what `f` must respect.
pub fn checkpoint<F>(
    inputs: &[&Tensor],
    preserve_rng: bool,
    f: F,
) -> Result<Vec<Tensor>, DeviceError>
where
    F: Fn(&[Tensor]) -> Vec<Tensor> + Send + 'static,
{
    let ptrs: Vec<*const C_tensor> = inputs.iter().map(|t| t.as_ptr()).collect();
    let ctx = Box::into_raw(Box::new(Block { f: Mutex::new(f) })) as *mut c_void;
    let mut outs: Vec<Tensor> = Vec::new();
    // SAFETY: the pointers are live for the call; `ctx` passes to the C++ side, which drops it
    // through `drop_block::<F>` exactly once; `outs` outlives the call.
    let err = unsafe {
        mzd_recompute(
            ptrs.as_ptr(),
            ptrs.len() as i64,
            run_block::<F>,
            drop_block::<F>,
            ctx,
            preserve_rng.into(),
            push_output,
            &mut outs as *mut Vec<Tensor> as *mut c_void,
        )
    };
    check(err, "running a recomputed block")?;
    Ok(outs)
}
