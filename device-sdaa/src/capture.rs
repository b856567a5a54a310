//! Capture of aten op calls at the dispatcher, for precision dumps (docs/diff.md).
//!
//! The C++ side (csrc/capture.cpp) installs a thread-local libtorch `RecordFunction` callback
//! that sees every outermost aten op the training thread runs — and, through libtorch's
//! thread-local state, the backward ops the autograd engine runs on its device threads — and
//! hands each tensor (inputs before the call, outputs after) to a [`Sink`] here. Models name
//! their modules with [`scope`] / [`module`]; both cost one atomic load when nothing captures.

use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use tch::Tensor;
use torch_sys::C_tensor;

use crate::shim::{check, take_string};
use crate::DeviceError;

/// One tensor as the C++ callback hands it over (csrc/capture.cpp `MzdCaptured`).
#[repr(C)]
struct RawCaptured {
    op: *const c_char,
    call: i64,
    backward: c_int,
    output: c_int,
    index: i64,
    scope: *const c_char,
    dtype: *const c_char,
    data_type: c_int,
    shape: *const i64,
    ndim: i64,
    data: *const c_void,
    nbytes: i64,
    tensor_id: i64,
    repeat: c_int,
}

type RawSink = unsafe extern "C" fn(ctx: *mut c_void, t: *const RawCaptured);

extern "C" {
    fn mzd_capture_start(
        sink: RawSink,
        ctx: *mut c_void,
        ops: c_int,
        repeats: c_int,
    ) -> *mut c_char;
    fn mzd_capture_stop() -> *mut c_char;
    fn mzd_capture_scope_push(name: *const c_char) -> *mut c_char;
    fn mzd_capture_scope_pop() -> *mut c_char;
    fn mzd_capture_module_tensor(
        op: *const c_char,
        call: i64,
        scope: *const c_char,
        output: c_int,
        index: i64,
        t: *const C_tensor,
    ) -> *mut c_char;
    fn mzd_step_scope_begin(out: *mut *mut c_void) -> *mut c_char;
    fn mzd_step_scope_end(scope: *mut c_void) -> *mut c_char;
}

/// The element type of [`Captured::data`] (a `c10::ScalarType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataType {
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    F32,
    F64,
    Bool,
    BF16,
}

impl DataType {
    fn from_scalar_type(t: c_int) -> Option<DataType> {
        Some(match t {
            0 => DataType::U8,
            1 => DataType::I8,
            2 => DataType::I16,
            3 => DataType::I32,
            4 => DataType::I64,
            5 => DataType::F16,
            6 => DataType::F32,
            7 => DataType::F64,
            11 => DataType::Bool,
            15 => DataType::BF16,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DataType::U8 | DataType::I8 | DataType::Bool => 1,
            DataType::I16 | DataType::F16 | DataType::BF16 => 2,
            DataType::I32 | DataType::F32 => 4,
            DataType::I64 | DataType::F64 => 8,
        }
    }
}

/// One tensor of one recorded call, borrowed for the duration of [`Sink::record`].
#[derive(Debug)]
pub struct Captured<'a> {
    /// `aten::convolution`, or `module::<scope>` for a module record.
    pub op: &'a str,
    /// 0-based call index of `op` within the capture.
    pub call: u64,
    pub backward: bool,
    pub output: bool,
    /// Position among the call's tensor inputs (outputs).
    pub index: u32,
    /// Module scope (`layer1.0.conv1`), empty outside any.
    pub scope: &'a str,
    /// The dtype the op saw, PyTorch's spelling (`float32`, `bfloat16`).
    pub dtype: &'a str,
    /// The type of `data` (float64 for a dtype the format has no name for).
    pub data_type: DataType,
    pub shape: &'a [i64],
    /// The elements in C order on the host; empty for a [`Self::repeat`].
    pub data: &'a [u8],
    /// Which tensor this is within the capture, when tracked: the same id, the same elements.
    pub tensor_id: Option<u64>,
    /// Handed over before unchanged (first as an op's output; same storage, place, layout
    /// and version): `data` is left out, the sink reuses what it computed for `tensor_id`.
    pub repeat: bool,
}

/// Where captured tensors go (the dump writer). Called from the training thread and from
/// the autograd engine's threads, never concurrently.
pub trait Sink: Send {
    fn record(&mut self, t: &Captured<'_>);
}

/// Whether a capture runs: the fast path of [`scope`] and [`module`].
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Module-level recording: `Some(calls per module)` while a capture records modules.
static MODULES: Mutex<Option<HashMap<String, u64>>> = Mutex::new(None);

/// A running capture into `S`; [`Capture::finish`] stops it and gives the sink back.
pub struct Capture<S: Sink> {
    sink: Option<Box<Mutex<S>>>,
}

unsafe extern "C" fn trampoline<S: Sink>(ctx: *mut c_void, raw: *const RawCaptured) {
    // No panic may unwind into C++.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `ctx` is the `Mutex<S>` boxed by `Capture::start`, alive until stop; `raw`
        // and everything it points to are alive for this call.
        let (sink, raw) = unsafe { (&*(ctx as *const Mutex<S>), &*raw) };
        let Some(data_type) = DataType::from_scalar_type(raw.data_type) else {
            return;
        };
        let text = |p: *const c_char| unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("?");
        let shape = unsafe { std::slice::from_raw_parts(raw.shape, raw.ndim.max(0) as usize) };
        let data = if raw.nbytes > 0 {
            unsafe { std::slice::from_raw_parts(raw.data as *const u8, raw.nbytes as usize) }
        } else {
            &[]
        };
        let t = Captured {
            op: text(raw.op),
            call: raw.call.max(0) as u64,
            backward: raw.backward != 0,
            output: raw.output != 0,
            index: raw.index.max(0) as u32,
            scope: text(raw.scope),
            dtype: text(raw.dtype),
            data_type,
            shape,
            data,
            tensor_id: u64::try_from(raw.tensor_id).ok(),
            repeat: raw.repeat != 0,
        };
        if let Ok(mut s) = sink.lock() {
            s.record(&t);
        }
    }));
}

impl<S: Sink> Capture<S> {
    /// Start capturing this thread's aten ops (`ops`) and the [`module`] records (`modules`)
    /// into `sink`; with `repeats`, a tensor seen before unchanged comes without its data
    /// ([`Captured::repeat`]: an activation is the output of one op and the input of the
    /// next, so its statistics need computing once). One capture at a time per process.
    pub fn start(
        sink: S,
        ops: bool,
        modules: bool,
        repeats: bool,
    ) -> Result<Capture<S>, DeviceError> {
        let boxed = Box::new(Mutex::new(sink));
        let ctx = &*boxed as *const Mutex<S> as *mut c_void;
        // SAFETY: the box outlives the capture (stopped in finish / drop before it is freed).
        let err = unsafe { mzd_capture_start(trampoline::<S>, ctx, ops.into(), repeats.into()) };
        check(err, "starting the op capture")?;
        if let Ok(mut m) = MODULES.lock() {
            *m = modules.then(HashMap::new);
        }
        ACTIVE.store(true, Ordering::SeqCst);
        Ok(Capture { sink: Some(boxed) })
    }

    fn stop(&mut self) -> Result<(), DeviceError> {
        ACTIVE.store(false, Ordering::SeqCst);
        if let Ok(mut m) = MODULES.lock() {
            *m = None;
        }
        check(unsafe { mzd_capture_stop() }, "stopping the op capture")
    }

    /// Stop capturing; the sink has received every tensor.
    pub fn finish(mut self) -> Result<S, DeviceError> {
        self.stop()?;
        let boxed = self.sink.take().expect("a running capture holds its sink");
        Ok(boxed.into_inner().unwrap_or_else(|e| e.into_inner()))
    }
}

impl<S: Sink> Drop for Capture<S> {
    fn drop(&mut self) {
        if self.sink.is_some() {
            let _ = self.stop();
        }
    }
}

/// A module scope opened by [`scope`]; closes it when dropped.
#[must_use = "the scope closes when the guard is dropped"]
pub struct ScopeGuard {
    pushed: bool,
}

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        if self.pushed {
            let err = unsafe { mzd_capture_scope_pop() };
            if !err.is_null() {
                drop(take_string(err));
            }
        }
    }
}

/// Whether a capture runs (ops are being recorded for a dump): a model then keeps the ops a
/// dump names rather than fusing them.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Attribute the ops run until the guard drops to module `name` (its var-store path, e.g.
/// `layer1.0.conv1`); backward ops inherit the scope of the forward op that made them.
/// Costs one atomic load when no capture runs.
pub fn scope(name: &str) -> ScopeGuard {
    if !ACTIVE.load(Ordering::Relaxed) {
        return ScopeGuard { pushed: false };
    }
    let Ok(c) = CString::new(name) else {
        return ScopeGuard { pushed: false };
    };
    let err = unsafe { mzd_capture_scope_push(c.as_ptr()) };
    if err.is_null() {
        ScopeGuard { pushed: true }
    } else {
        drop(take_string(err));
        ScopeGuard { pushed: false }
    }
}

/// Run module `name`'s forward `f` on `input` inside its [`scope`]; with module-level
/// recording, its input and output are recorded as `module::<name>` (forward only).
pub fn module(name: &str, input: &Tensor, f: impl FnOnce() -> Tensor) -> Tensor {
    if !ACTIVE.load(Ordering::Relaxed) {
        return f();
    }
    let _scope = scope(name);
    let call = MODULES.lock().ok().and_then(|mut m| {
        m.as_mut().map(|calls| {
            let k = calls.entry(name.to_string()).or_insert(0);
            *k += 1;
            *k - 1
        })
    });
    let Some(call) = call else {
        return f();
    };
    record_module_tensor(name, call, false, input);
    let out = f();
    record_module_tensor(name, call, true, &out);
    out
}

fn record_module_tensor(name: &str, call: u64, output: bool, t: &Tensor) {
    let label = if name.is_empty() { "root" } else { name };
    let (Ok(op), Ok(scope)) = (CString::new(format!("module::{label}")), CString::new(name)) else {
        return;
    };
    let err = unsafe {
        mzd_capture_module_tensor(
            op.as_ptr(),
            call as i64,
            scope.as_ptr(),
            output.into(),
            0,
            t.as_ptr(),
        )
    };
    if !err.is_null() {
        tracing::warn!("recording module {name}: {}", take_string(err));
    }
}

/// The `modelzoo::step` RecordFunction user scope around a dumped step: the SDAA emulator's
/// `SDAA_EMU_PERTURB` counts op calls from its start, as the dump does.
pub struct StepScope(*mut c_void);

impl StepScope {
    pub fn open() -> Result<StepScope, DeviceError> {
        let mut out: *mut c_void = std::ptr::null_mut();
        check(
            unsafe { mzd_step_scope_begin(&mut out) },
            "opening the modelzoo::step scope",
        )?;
        Ok(StepScope(out))
    }
}

impl Drop for StepScope {
    fn drop(&mut self) {
        let err = unsafe { mzd_step_scope_end(self.0) };
        if !err.is_null() {
            drop(take_string(err));
        }
    }
}
