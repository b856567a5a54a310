// Precision-dump capture at the dispatcher (see src/capture.rs): a thread-local RecordFunction
// callback that hands the tensors of every outermost aten op call to a Rust sink.
//
// Only what needs libtorch lives here: which records count (the outermost FUNCTION record of
// the thread, or one directly under a BACKWARD_FUNCTION record), the phase, the per-op call
// index, the module scope (a stack pushed from Rust; backward ops take the scope of the
// forward op that created their autograd node, matched by sequence number) and a contiguous
// host copy of each tensor. Statistics, checksums and files are Rust's job (src/dump.rs).
//
// Thread-local callbacks travel with at::ThreadLocalState into the autograd engine's device
// threads (the graph task captures it), so backward on an sdaa/cuda device thread is seen,
// while threads that never inherited it (the data loader's) are not.
#include <ATen/ATen.h>
#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "protect.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
// One tensor handed to Rust. `data` holds `nbytes` bytes of the tensor in C order on the host,
// as `data_type` (a c10::ScalarType); `dtype` names the type the op saw (PyTorch spelling).
struct MzdCaptured {
  const char* op;
  int64_t call;
  int backward;  // 0 forward, 1 backward
  int output;    // 0 input, 1 output
  int64_t index;
  const char* scope;
  const char* dtype;
  int data_type;
  const int64_t* shape;
  int64_t ndim;
  const void* data;
  int64_t nbytes;
  // Which tensor this is (-1: not tracked), and whether it was handed over before, unchanged:
  // then `data` is null and the sink reuses what it computed for `tensor_id`.
  int64_t tensor_id;
  int repeat;
};
typedef void (*MzdSink)(void* ctx, const MzdCaptured* t);
}

namespace {

constexpr const char* kStepScope = "modelzoo::step";

struct Session {
  MzdSink sink = nullptr;
  void* ctx = nullptr;
  bool ops = true;      // record aten ops (level op / mix)
  bool repeats = true;  // hand a tensor seen before, unchanged, over without its data
  at::CallbackHandle handle = 0;
  std::mutex mutex;  // guards what follows (forward and backward threads)
  std::vector<std::string> scopes;
  std::unordered_map<std::string, int64_t> calls;
  std::map<int64_t, std::string> scope_of_seq;  // forward op's sequence numbers -> its scope
  // Tensors handed over: (storage, data, offset, dtype, version, sizes, strides) -> id. The
  // weak references keep each StorageImpl's address from being reused for another storage
  // while the capture runs (they do not keep the data alive).
  std::map<std::vector<int64_t>, int64_t> seen;
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> storages;
};
Session* session = nullptr;  // set and cleared on the thread that owns the capture

// One open record of this thread, innermost last.
struct Frame {
  at::RecordScope scope;
  bool in_fn;            // inside a FUNCTION record opened since the last backward node
  bool in_backward;      // under a BACKWARD_FUNCTION record
  int64_t backward_seq;  // that record's sequence number (its node's)
};
thread_local std::vector<Frame> frames;

// What start hands to end for a recorded op.
struct Context : at::ObserverContext {
  std::string op;
  int64_t call = 0;
  bool backward = false;
  std::string scope;
  int64_t seq = -1;
};

const char* dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Bool: return "bool";
    case c10::ScalarType::BFloat16: return "bfloat16";
    default: return nullptr;
  }
}

// The tensors of a list of values, in order (tensors, tensor lists, optional tensors).
std::vector<at::Tensor> tensors_of(c10::ArrayRef<const c10::IValue> values) {
  std::vector<at::Tensor> out;
  auto add = [&](const at::Tensor& t) {
    if (t.defined() && t.layout() == c10::kStrided && !t.is_complex() &&
        t.device().type() != c10::DeviceType::Meta) {
      out.push_back(t);
    }
  };
  for (const c10::IValue& v : values) {
    if (v.isTensor()) {
      add(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) add(t);
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef()) {
        if (e.isTensor()) add(e.toTensor());
      }
    }
  }
  return out;
}

// The id of `t` among the tensors handed over, and whether it was handed over before with the
// same elements (same storage, place, layout and version); {-1, false} when not tracked.
// Only op outputs are tracked: a kernel may update an argument in place without bumping its
// version (batch_norm's running statistics), so a tensor first seen as an input (parameters,
// buffers, the batch) is read every time; an output is a fresh result, changed after only by
// in-place ops, which bump the version.
std::pair<int64_t, bool> identify(const at::Tensor& t, bool output) {
  if (!session->repeats || t.is_inference() || !t.has_storage()) return {-1, false};
  const c10::Storage& st = t.storage();
  std::vector<int64_t> key{reinterpret_cast<int64_t>(st.unsafeGetStorageImpl()),
                           reinterpret_cast<int64_t>(st.data()), t.storage_offset(),
                           static_cast<int64_t>(t.scalar_type()),
                           static_cast<int64_t>(t._version())};
  key.insert(key.end(), t.sizes().begin(), t.sizes().end());
  key.insert(key.end(), t.strides().begin(), t.strides().end());
  std::lock_guard<std::mutex> lock(session->mutex);
  auto found = session->seen.find(key);
  if (found != session->seen.end()) return {found->second, true};
  if (!output) return {-1, false};
  int64_t id = static_cast<int64_t>(session->seen.size());
  session->seen.emplace(std::move(key), id);
  session->storages.push_back(st.getWeakStorageImpl());
  return {id, false};
}

void hand_over(const Context& c, bool output, int64_t index, const at::Tensor& t) {
  auto [id, repeat] = identify(t, output);
  if (repeat) {
    std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
    const char* name = dtype_name(t.scalar_type());
    std::string other = name == nullptr ? c10::toString(t.scalar_type()) : "";
    MzdCaptured rec{c.op.c_str(), c.call, c.backward ? 1 : 0, output ? 1 : 0, index,
                    c.scope.c_str(), name != nullptr ? name : other.c_str(),
                    static_cast<int>(name != nullptr ? t.scalar_type() : at::kDouble),
                    shape.data(), static_cast<int64_t>(shape.size()), nullptr, 0, id, 1};
    session->sink(session->ctx, &rec);
    return;
  }
  at::Tensor host = t.detach();
  const char* name = dtype_name(host.scalar_type());
  std::string other;
  if (name == nullptr) {  // a type the dump format has no name for: its values as float64
    other = c10::toString(host.scalar_type());
    name = other.c_str();
    host = host.to(at::kDouble);
  }
  host = host.to(at::kCPU).contiguous();
  std::vector<int64_t> shape(host.sizes().begin(), host.sizes().end());
  MzdCaptured rec{c.op.c_str(),
                  c.call,
                  c.backward ? 1 : 0,
                  output ? 1 : 0,
                  index,
                  c.scope.c_str(),
                  name,
                  static_cast<int>(host.scalar_type()),
                  shape.data(),
                  static_cast<int64_t>(shape.size()),
                  host.data_ptr(),
                  static_cast<int64_t>(host.numel() * host.element_size()),
                  id,
                  0};
  session->sink(session->ctx, &rec);
}

// The at:: calls made while handing tensors over are neither recorded, differentiated nor
// autocast.
struct Quiet {
  at::DisableRecordFunctionGuard no_records;
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  c10::impl::ExcludeDispatchKeyGuard no_autocast{c10::autocast_dispatch_keyset};
};

void hand_over_all(const Context& c, bool output, c10::ArrayRef<const c10::IValue> values) {
  Quiet quiet;
  std::vector<at::Tensor> ts = tensors_of(values);
  for (size_t i = 0; i < ts.size(); ++i) hand_over(c, output, static_cast<int64_t>(i), ts[i]);
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  Frame f = frames.empty() ? Frame{at::RecordScope::USER_SCOPE, false, false, -1}
                           : frames.back();
  f.scope = fn.scope();
  bool record = false;
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    f.in_backward = true;
    f.backward_seq = fn.seqNr();
    f.in_fn = false;
  } else if (fn.scope() == at::RecordScope::FUNCTION) {
    // aten::_backward (tch's Tensor::backward) only wraps the autograd engine: what it runs
    // outside a backward node (the seed gradient) is not the model's.
    record = !f.in_fn && std::string(fn.name()) != "aten::_backward";
    f.in_fn = true;
  }
  frames.push_back(f);
  if (!record || session == nullptr || !session->ops) return nullptr;
  auto c = std::make_unique<Context>();
  c->op = fn.name();
  c->backward = f.in_backward;
  {
    std::lock_guard<std::mutex> lock(session->mutex);
    c->call = session->calls[c->op]++;
    if (f.in_backward) {
      auto it = session->scope_of_seq.find(f.backward_seq);
      if (it != session->scope_of_seq.end()) c->scope = it->second;
    } else if (!session->scopes.empty()) {
      c->scope = session->scopes.back();
    }
  }
  c->seq = fn.seqNr();
  hand_over_all(*c, false, fn.inputs());
  return c;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  if (!frames.empty()) frames.pop_back();
  if (ctx == nullptr || session == nullptr) return;
  auto* c = static_cast<Context*>(ctx);
  if (!c->backward && c->seq >= 0) {
    // Autograd nodes this op created took sequence numbers [seq, next).
    int64_t next = static_cast<int64_t>(at::sequence_number::peek());
    std::lock_guard<std::mutex> lock(session->mutex);
    for (int64_t s = c->seq; s < next; ++s) session->scope_of_seq[s] = c->scope;
  }
  const std::vector<c10::IValue>& outs = fn.outputs();
  hand_over_all(*c, true, c10::ArrayRef<const c10::IValue>(outs.data(), outs.size()));
}

}  // namespace

extern "C" {

// Starts capturing this thread's ops (and the autograd threads it starts) into `sink`.
char* mzd_capture_start(MzdSink sink, void* ctx, int ops, int repeats) {
  MZD_PROTECT({
    if (session != nullptr) throw std::runtime_error("a capture is already running");
    frames.clear();
    auto s = std::make_unique<Session>();
    s->sink = sink;
    s->ctx = ctx;
    s->ops = ops != 0;
    s->repeats = repeats != 0;
    // Module records alone (level `module`) are handed over directly: no op callback needed.
    if (s->ops) s->handle = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&on_start, &on_end)
            .needsInputs(true)
            .needsOutputs(true)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                     at::RecordScope::USER_SCOPE}));
    session = s.release();
  })
}

// Stops the capture: no call into the sink follows.
char* mzd_capture_stop() {
  MZD_PROTECT({
    if (session == nullptr) return nullptr;
    if (session->ops) at::removeCallback(session->handle);
    delete session;
    session = nullptr;
    frames.clear();
  })
}

char* mzd_capture_scope_push(const char* name) {
  MZD_PROTECT({
    if (session == nullptr) return nullptr;
    std::lock_guard<std::mutex> lock(session->mutex);
    session->scopes.emplace_back(name);
  })
}

char* mzd_capture_scope_pop() {
  MZD_PROTECT({
    if (session == nullptr) return nullptr;
    std::lock_guard<std::mutex> lock(session->mutex);
    if (!session->scopes.empty()) session->scopes.pop_back();
  })
}

// Hands `t` to the sink as tensor `index` of a module record (`op` = `module::<scope>`).
char* mzd_capture_module_tensor(const char* op, int64_t call, const char* scope, int output,
                                int64_t index, const at::Tensor* t) {
  MZD_PROTECT({
    if (session == nullptr || !t->defined()) return nullptr;
    Context c;
    c.op = op;
    c.call = call;
    c.scope = scope;
    Quiet quiet;
    hand_over(c, output != 0, index, *t);
  })
}

// Opens the `modelzoo::step` user scope (the SDAA emulator's perturbation counts restart
// there); `*out` is closed by mzd_step_scope_end.
char* mzd_step_scope_begin(void** out) {
  MZD_PROTECT({
    auto rf = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (rf->isActive()) rf->before(kStepScope);
    *out = rf.release();
  })
}

char* mzd_step_scope_end(void* scope) {
  MZD_PROTECT({ delete static_cast<at::RecordFunction*>(scope); })
}

}  // extern "C"
