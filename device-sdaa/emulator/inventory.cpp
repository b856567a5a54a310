// SDAA EMULATOR — the op inventory: which dispatcher ops ran on the emulated device, with which
// dtypes and how often; which ran on the CPU side instead; which used fp64; and which the plugin
// could only serve through libtorch's copying cpu_fallback. torch_sdaa turns it on
// (SDAA_EMULATOR_OP_INVENTORY) and writes the files; the plugin's other users (device-sdaa)
// never do, so no callback is installed and nothing is slower.
//
// An op is seen once per call, through libtorch's RecordFunction (the dispatcher's name, as
// profilers see it), at every level: a composite op and the ops it calls are all counted. What
// the plugin runs inside an sdaa kernel is not (it disables RecordFunction there). An op ran on
// the device when an operand or a result is an sdaa tensor, or it was given an sdaa device;
// otherwise it ran on the host. A call that ended by raising (its record ends while the
// exception unwinds) failed: the inventory lists such ops on sdaa with the error's first line.
#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include "inventory.h"

#include <atomic>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#define EXPORT __attribute__((visibility("default")))

namespace {

constexpr c10::DeviceType kSdaa = c10::DeviceType::PrivateUse1;

using Counts = std::map<std::string, int64_t>;

struct Inventory {
  std::mutex mutex;
  std::map<std::string, Counts> device;  // op -> dtype signature -> calls
  std::map<std::string, Counts> host;
  Counts fp64_device;  // op -> calls with an fp64 operand on sdaa
  Counts fp64_host;    // op -> calls on the host with an fp64 operand
  Counts fallbacks;    // op -> calls served by cpu_fallback
  Counts failed;       // op -> calls on sdaa that raised
  std::map<std::string, std::string> failed_why;  // op -> the first failure's reason
};

// The text of the last failure a plugin kernel raised on this thread (see note_failure).
// It is forgotten when this thread's outermost recorded call ends.
thread_local std::string last_failure;
thread_local int open_calls = 0;  // this thread's recorded calls in progress

// Callbacks stay registered until the process ends and may fire after static destructors ran:
// the state is allocated once and never destroyed (as in perturb.cpp).
Inventory& inventory() {
  static Inventory* i = new Inventory;
  return *i;
}

std::atomic<bool> enabled{false};

// torch's Python names, which the inventory files use.
std::string dtype_name(at::ScalarType s) {
  switch (s) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kShort: return "int16";
    case at::kChar: return "int8";
    case at::kByte: return "uint8";
    case at::kBool: return "bool";
    case at::kComplexFloat: return "complex64";
    case at::kComplexDouble: return "complex128";
    default: return c10::toString(s);
  }
}

bool is_fp64(at::ScalarType s) { return s == at::kDouble || s == at::kComplexDouble; }

// One call, from its operands (seen at its start) and its results (seen at its end).
struct Call : at::ObserverContext {
  bool device = false;       // an sdaa operand, result or device argument
  bool fp64_device = false;  // an fp64 tensor on sdaa
  bool fp64_any = false;     // an fp64 tensor anywhere
  bool has_tensors = false;  // the signature came from the operands
  int unwinding = 0;         // exceptions in flight when the call began
  std::string dtypes;        // the tensor operands' dtypes, in argument order

  void see(const at::Tensor& t) {
    if (!t.defined()) return;
    const bool on_sdaa = t.device().type() == kSdaa;
    device |= on_sdaa;
    if (is_fp64(t.scalar_type())) {
      fp64_any = true;
      fp64_device |= on_sdaa;
    }
  }
  void add(const std::string& piece) {
    if (!dtypes.empty()) dtypes += ",";
    dtypes += piece;
  }
  // A tensor adds its dtype; a tensor list adds its distinct dtypes in brackets ("[float32]").
  void see_value(const c10::IValue& v, bool sign) {
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      see(t);
      if (sign && t.defined()) add(dtype_name(t.scalar_type()));
    } else if (v.isList()) {  // Tensor[], Tensor?[] (and lists of scalars: nothing to see)
      std::set<std::string> names;
      bool any = false;
      for (const c10::IValue& e : v.toListRef()) {
        if (!e.isTensor()) continue;
        any = true;
        see(e.toTensor());
        if (e.toTensor().defined()) names.insert(dtype_name(e.toTensor().scalar_type()));
      }
      if (sign && any) {
        std::string piece = "[";
        for (const std::string& n : names) piece += (piece.size() > 1 ? "," : "") + n;
        add(piece + "]");
      }
    } else if (v.isDevice()) {
      device |= v.toDevice().type() == kSdaa;
    }
  }
};

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  // Dispatcher ops only: not the autograd engine's or Python's own FUNCTION-scope records.
  if (!fn.operator_name().has_value()) return nullptr;
  auto call = std::make_unique<Call>();
  for (const c10::IValue& v : fn.inputs()) call->see_value(v, /*sign=*/true);
  call->has_tensors = !call->dtypes.empty();
  call->unwinding = std::uncaught_exceptions();
  ++open_calls;
  return call;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  auto* call = static_cast<Call*>(ctx);
  if (call == nullptr) return;
  struct Close {
    ~Close() {
      if (--open_calls <= 0) {
        open_calls = 0;
        last_failure.clear();
      }
    }
  } close;
  // A factory's signature is what it made.
  for (const c10::IValue& v : fn.outputs()) call->see_value(v, /*sign=*/!call->has_tensors);
  const std::string name = fn.name();
  // The record ends while an exception unwinds through the call: the op raised.
  const bool failed = call->device && std::uncaught_exceptions() > call->unwinding;
  Inventory& inv = inventory();
  std::lock_guard<std::mutex> lock(inv.mutex);
  (call->device ? inv.device : inv.host)[name][call->dtypes]++;
  if (failed) {
    inv.failed[name]++;
    if (!inv.failed_why.count(name)) {
      inv.failed_why[name] = last_failure.empty() ? "raised an error" : last_failure;
    }
  }
  if (call->device && call->fp64_device) inv.fp64_device[name]++;
  if (!call->device && call->fp64_any) inv.fp64_host[name]++;
}

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) q += c;
  }
  return q + "\"";
}

std::string json(const Counts& counts) {
  std::string out = "{";
  for (const auto& [key, n] : counts) {
    out += (out.size() > 1 ? "," : "") + quoted(key) + ":" + std::to_string(n);
  }
  return out + "}";
}

std::string json(const std::map<std::string, std::string>& texts) {
  std::string out = "{";
  for (const auto& [key, text] : texts) {
    out += (out.size() > 1 ? "," : "") + quoted(key) + ":" + quoted(text);
  }
  return out + "}";
}

std::string json(const std::map<std::string, Counts>& ops) {
  std::string out = "{";
  for (const auto& [op, counts] : ops) {
    out += (out.size() > 1 ? "," : "") + quoted(op) + ":" + json(counts);
  }
  return out + "}";
}

}  // namespace

namespace sdaa_emulator {
bool inventory_enabled() { return enabled.load(std::memory_order_relaxed); }

void note_emulator_fallback(std::string_view op) {
  Inventory& inv = inventory();
  std::lock_guard<std::mutex> lock(inv.mutex);
  inv.fallbacks[std::string(op)]++;
}

void note_failure(std::string_view why) {
  std::string text(why);
  text = text.substr(0, text.find('\n'));
  // libtorch's "Could not run 'op' with arguments from the 'CPU' backend", said for the emulator.
  if (text.rfind("Could not run '", 0) == 0) {
    text = "no CPU kernel for the emulator to run (libtorch implements the op for other devices "
           "only): " + text;
  }
  last_failure = text;
  if (last_failure.size() > 300) last_failure = last_failure.substr(0, 300) + "...";
}
}  // namespace sdaa_emulator

extern "C" {
// Starts counting (idempotent). torch_sdaa calls it for SDAA_EMULATOR_OP_INVENTORY.
EXPORT int torch_sdaa_emu_inventory_enable() {
  static std::once_flag once;
  std::call_once(once, [] {
    at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                              .needsInputs(true)
                              .needsOutputs(true)
                              .scopes({at::RecordScope::FUNCTION}));
    enabled.store(true);
  });
  return 0;
}

// The counts so far as JSON ({"device": {op: {dtypes: calls}}, "host": ..., "fp64_device":
// {op: calls}, "fp64_host": ..., "emulator_fallbacks": ..., "failed": {op: calls},
// "failed_why": {op: the first failure's reason}), NUL-terminated into `buffer` when
// it holds `capacity` bytes. Returns the bytes needed, NUL included: call again with that many
// when it is more than `capacity`.
EXPORT size_t torch_sdaa_emu_inventory_json(char* buffer, size_t capacity) {
  Inventory& inv = inventory();
  std::string out;
  {
    std::lock_guard<std::mutex> lock(inv.mutex);
    out = "{\"device\":" + json(inv.device) + ",\"host\":" + json(inv.host) +
          ",\"fp64_device\":" + json(inv.fp64_device) + ",\"fp64_host\":" + json(inv.fp64_host) +
          ",\"emulator_fallbacks\":" + json(inv.fallbacks) + ",\"failed\":" + json(inv.failed) +
          ",\"failed_why\":" + json(inv.failed_why) + "}";
  }
  if (buffer != nullptr && capacity > out.size()) std::memcpy(buffer, out.c_str(), out.size() + 1);
  return out.size() + 1;
}

// Forgets the counts so far (the inventory keeps counting).
EXPORT void torch_sdaa_emu_inventory_reset() {
  Inventory& inv = inventory();
  std::lock_guard<std::mutex> lock(inv.mutex);
  inv.device.clear();
  inv.host.clear();
  inv.fp64_device.clear();
  inv.fp64_host.clear();
  inv.fallbacks.clear();
  inv.failed.clear();
  inv.failed_why.clear();
}
}
