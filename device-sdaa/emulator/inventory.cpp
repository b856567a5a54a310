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
//
// A call of an op TORCH_SDAA_FALLBACK_OPS names is a fallback (counted per op); the ops it calls
// ran on the CPU with it (host ops). Each device op is marked a *candidate* for fallback when it
// has a device output and is neither a view, a composite (its parts are the candidates) nor the
// device's own plumbing (allocation, copies): the ops `modelzoo bisect` searches.
//
// With SDAA_EMULATOR_OP_INVENTORY set when the plugin loads, counting starts then and the files
// are written at process exit by the plugin itself, whichever frontend loaded it (the Rust
// models through device-sdaa); torch_sdaa writes them instead when it is the frontend.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <torch/headeronly/version.h>

#include "inventory.h"
#include "perturb.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#define EXPORT __attribute__((visibility("default")))

extern "C" const char* torch_sdaa_version();

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
  Counts user_fallbacks;  // op -> calls run as CPU ops for TORCH_SDAA_FALLBACK_OPS
  std::map<std::string, bool> candidate;  // device op -> a candidate for fallback
  Counts failed;       // op -> calls on sdaa that raised
  std::map<std::string, std::string> failed_why;  // op -> the first failure's reason
};

// The text of the last failure a plugin kernel raised on this thread (see note_failure).
// It is forgotten when this thread's outermost recorded call ends.
thread_local std::string last_failure;
thread_local int open_calls = 0;  // this thread's recorded calls in progress
thread_local int open_fallbacks = 0;  // this thread's TORCH_SDAA_FALLBACK_OPS calls in progress

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
  bool fallback = false;     // a TORCH_SDAA_FALLBACK_OPS op
  bool inside_fallback = false;  // called by one: it ran on the CPU
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
  call->inside_fallback = open_fallbacks > 0;
  call->fallback = sdaa_emulator::any_fallback_ops() && sdaa_emulator::is_fallback_op(fn.name());
  if (call->fallback) ++open_fallbacks;
  ++open_calls;
  return call;
}

// The plumbing of the device itself (allocation, copies between devices, storage): no kernel
// that could compute wrong, nothing to fall back.
bool plumbing(const std::string& name) {
  static const std::set<std::string> ops = {
      "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::_copy_from",
      "aten::_copy_from_and_resize", "aten::copy_", "aten::_to_copy", "aten::to",
      "aten::resize_", "aten::set_", "aten::record_stream", "aten::_local_scalar_dense",
      "aten::_has_compatible_shallow_copy_type", "aten::lift_fresh", "aten::detach_"};
  return ops.count(name) > 0;
}

// Whether the op (this overload) could be given to TORCH_SDAA_FALLBACK_OPS: a kernel of its own
// (an sdaa kernel, or the backend fallback), not a composite of other ops, not a view.
bool candidate_kind(const c10::OperatorName& opname) {
  if (plumbing(opname.name)) return false;
  const std::optional<c10::OperatorHandle> op = c10::Dispatcher::singleton().findOp(opname);
  if (!op) return false;
  for (const c10::Argument& r : op->schema().returns()) {
    if (r.alias_info() != nullptr && !r.alias_info()->isWrite()) return false;  // a view
  }
  if (op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) return true;
  return !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) &&
         !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) &&
         !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional);
}

bool sdaa_output(const std::vector<c10::IValue>& values) {
  for (const c10::IValue& v : values) {
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().device().type() == kSdaa) {
      return true;
    }
    if (v.isList()) {
      for (const c10::IValue& e : v.toListRef()) {
        if (e.isTensor() && e.toTensor().defined() && e.toTensor().device().type() == kSdaa) {
          return true;
        }
      }
    }
  }
  return false;
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
  if (call->fallback) --open_fallbacks;
  // What a fallback op called ran on the CPU with it.
  if (call->inside_fallback) call->device = false;
  // A factory's signature is what it made.
  for (const c10::IValue& v : fn.outputs()) call->see_value(v, /*sign=*/!call->has_tensors);
  const std::string name = fn.name();
  // The record ends while an exception unwinds through the call: the op raised.
  const bool failed = call->device && std::uncaught_exceptions() > call->unwinding;
  // Whether this overload may be a candidate, found once per overload.
  bool kind = false;
  if (call->device) {
    static std::mutex kinds_mutex;
    static auto* kinds = new std::map<std::string, bool>;
    const c10::OperatorName opname = *fn.operator_name();
    const std::string key = opname.name + "." + opname.overload_name;
    std::lock_guard<std::mutex> lock(kinds_mutex);
    auto it = kinds->find(key);
    if (it == kinds->end()) it = kinds->emplace(key, candidate_kind(opname)).first;
    kind = it->second;
  }
  // An in-place op that returns nothing (`_foreach_add_`) changed its sdaa operands.
  const bool candidate = kind && (sdaa_output(fn.outputs()) || fn.outputs().empty());
  Inventory& inv = inventory();
  std::lock_guard<std::mutex> lock(inv.mutex);
  (call->device ? inv.device : inv.host)[name][call->dtypes]++;
  if (call->device) {
    bool& c = inv.candidate[name];
    c = c || candidate;
    if (call->fallback) inv.user_fallbacks[name]++;
  }
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

std::string short_name(const std::string& op) {
  return op.rfind("aten::", 0) == 0 ? op.substr(6) : op;
}

// [{"op": ..., "count": ...}, ...]
std::string count_list(const Counts& counts) {
  std::string out = "[";
  for (const auto& [op, n] : counts) {
    out += std::string(out.size() > 1 ? ",\n  " : "") + "{\"op\": " + quoted(op) +
           ", \"count\": " + std::to_string(n) + "}";
  }
  return out + "]";
}

// Python's repr of a list of names: ['a', 'b'] (the names hold no quotes).
std::string py_list(const std::set<std::string>& names) {
  std::string out = "[";
  for (const std::string& n : names) out += (out.size() > 1 ? ", '" : "'") + n + "'";
  return out + "]";
}

std::string json_list(const std::set<std::string>& names) {
  std::string out = "[";
  for (const std::string& n : names) out += (out.size() > 1 ? ", " : "") + quoted(n);
  return out + "]";
}

int env_rank() {
  const char* rank = std::getenv("RANK");
  if (rank == nullptr || *rank == '\0') return 0;
  char* end = nullptr;
  const long r = std::strtol(rank, &end, 10);
  return (*end != '\0' || r < 0 || r > 1000000) ? 0 : static_cast<int>(r);
}

struct Document {
  std::string json;      // op_inventory.rank<R>.json
  std::string coverage;  // coverage.rank<R>.txt
};

// The inventory so far in the files' form (schema in docs/torch_sdaa.md): one source for both
// frontends (torch_sdaa adds its host torch's full version).
Document document() {
  Inventory& inv = inventory();
  std::lock_guard<std::mutex> lock(inv.mutex);
  auto ops = [&](const std::map<std::string, Counts>& by_op, bool device) {
    std::string out = "[";
    for (const auto& [op, sigs] : by_op) {
      int64_t total = 0;
      std::string dtypes = "[";
      for (const auto& [sig, n] : sigs) {
        total += n;
        dtypes += std::string(dtypes.size() > 1 ? ", " : "") + "{\"dtypes\": " + quoted(sig) +
                  ", \"count\": " + std::to_string(n) + "}";
      }
      out += std::string(out.size() > 1 ? ",\n  " : "") + "{\"op\": " + quoted(op) +
             ", \"count\": " + std::to_string(total) + ", \"dtypes\": " + dtypes + "]";
      if (device) {
        auto flag = [](bool b) { return b ? "true" : "false"; };
        auto c = inv.candidate.find(op);
        out += std::string(", \"emulator_fallback\": ") + flag(inv.fallbacks.count(op)) +
               ", \"failed\": " + flag(inv.failed.count(op)) +
               ", \"fallback\": " + flag(inv.user_fallbacks.count(op)) +
               ", \"candidate\": " + flag(c != inv.candidate.end() && c->second);
      }
      out += "}";
    }
    return out + "]";
  };
  std::set<std::string> all_api, fallback_api, failed_api, candidates;
  for (const auto& [op, sigs] : inv.device) {
    all_api.insert(short_name(op));
    if (inv.fallbacks.count(op) || inv.user_fallbacks.count(op)) {
      fallback_api.insert(short_name(op));
    }
  }
  for (const auto& [op, n] : inv.failed) failed_api.insert(short_name(op));
  for (const auto& [op, c] : inv.candidate) {
    if (c) candidates.insert(op);
  }
  size_t covered = 0;
  for (const std::string& op : all_api) {
    covered += !fallback_api.count(op) && !failed_api.count(op);
  }
  const double rate = all_api.empty() ? 0.0 : 100.0 * covered / all_api.size();
  char rate_text[32];
  std::snprintf(rate_text, sizeof rate_text, "%.2f", rate);
  std::string failed = "[";
  for (const auto& [op, n] : inv.failed) {
    auto why = inv.failed_why.find(op);
    failed += std::string(failed.size() > 1 ? ",\n  " : "") + "{\"op\": " + quoted(op) +
              ", \"count\": " + std::to_string(n) + ", \"reason\": " +
              quoted(why == inv.failed_why.end() ? "raised an error" : why->second) + "}";
  }
  failed += "]";
  Document doc;
  doc.json = std::string("{\n \"format\": \"modelzoo-sdaa-op-inventory\", \"version\": 1, ") +
             "\"emulator\": true,\n \"rank\": " + std::to_string(env_rank()) +
             ", \"pid\": " + std::to_string(getpid()) + ", \"torch\": \"" +
             std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
             "." + std::to_string(TORCH_VERSION_PATCH) + "\", \"torch_sdaa\": " +
             quoted(torch_sdaa_version()) + ",\n \"device_ops\": " + ops(inv.device, true) +
             ",\n \"host_ops\": " + ops(inv.host, false) + ",\n \"fp64\": {\"device\": " +
             count_list(inv.fp64_device) + ", \"host\": " + count_list(inv.fp64_host) +
             "},\n \"emulator_fallbacks\": " + count_list(inv.fallbacks) +
             ",\n \"fallback_ops\": " + count_list(inv.user_fallbacks) +
             ",\n \"fallback_candidates\": " + json_list(candidates) +
             ",\n \"failed_ops\": " + failed + ",\n \"coverage\": {\"all_api\": " +
             json_list(all_api) + ", \"fallback_op\": " + json_list(fallback_api) +
             ", \"failed_op\": " + json_list(failed_api) + ", \"rate_percent\": " + rate_text +
             "}\n}\n";
  doc.coverage = "all api: " + py_list(all_api) + ", total: " + std::to_string(all_api.size()) +
                 "\nfallback op: " + py_list(fallback_api) +
                 ", total: " + std::to_string(fallback_api.size()) + "\n";
  if (!failed_api.empty()) {
    doc.coverage += "failed op: " + py_list(failed_api) +
                    ", total: " + std::to_string(failed_api.size()) + "\n";
  }
  doc.coverage += std::string("coverage rate: ") + rate_text + "%\n";
  return doc;
}

// `text` into `path` through a temporary file and a rename: never a half-written file.
bool write_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool make_dirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      const std::string part = dir.substr(0, i);
      if (mkdir(part.c_str(), 0777) != 0 && errno != EEXIST) return false;
    }
  }
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

constexpr const char* kInventoryVariable = "SDAA_EMULATOR_OP_INVENTORY";
std::atomic<bool> frontend_writes{false};

// At exit of a process whose frontend does not write the inventory itself (the Rust models).
void write_at_exit() {
  if (frontend_writes.load()) return;
  const char* dir = std::getenv(kInventoryVariable);
  if (dir == nullptr || *dir == '\0') return;
  const Document doc = document();
  const std::string base = std::string(dir) + "/";
  const std::string rank = std::to_string(env_rank());
  if (!make_dirs(dir) || !write_atomic(base + "op_inventory.rank" + rank + ".json", doc.json) ||
      !write_atomic(base + "coverage.rank" + rank + ".txt", doc.coverage)) {
    std::fprintf(stderr, "SDAA emulator: cannot write the op inventory into %s=%s: %s\n",
                 kInventoryVariable, dir, std::strerror(errno));
  }
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

// The inventory document (`kind` 0: op_inventory.rank<R>.json, 1: coverage.rank<R>.txt),
// NUL-terminated into `buffer` as torch_sdaa_emu_inventory_json does.
EXPORT size_t torch_sdaa_emu_inventory_document(char* buffer, size_t capacity, int kind) {
  const Document doc = document();
  const std::string& out = kind == 1 ? doc.coverage : doc.json;
  if (buffer != nullptr && capacity > out.size()) std::memcpy(buffer, out.c_str(), out.size() + 1);
  return out.size() + 1;
}

// torch_sdaa writes the files itself (at interpreter exit): the plugin's exit writer stands down.
EXPORT void torch_sdaa_emu_inventory_frontend_writes() { frontend_writes.store(true); }

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
  inv.user_fallbacks.clear();
  inv.candidate.clear();
}
}

namespace {
// SDAA_EMULATOR_OP_INVENTORY set when the plugin loads: count from now on, write at exit.
struct StartFromEnv {
  StartFromEnv() {
    const char* dir = std::getenv(kInventoryVariable);
    if (dir == nullptr || *dir == '\0') return;
    torch_sdaa_emu_inventory_enable();
    std::atexit(&write_at_exit);
  }
} start_from_env;
}  // namespace
