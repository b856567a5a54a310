// SDAA EMULATOR — SDAA_EMU_PERTURB: the emulated device computes one op call wrong, on purpose,
// so precision tools (`modelzoo diff`, `modelzoo bisect`, docs/diff.md) have a ground truth to be
// tested against; and TORCH_SDAA_FALLBACK_OPS, the real runtime's list of ops to run on the CPU.
//
//   SDAA_EMU_PERTURB='aten::convolution#7:rel=0.05'   every element x of the outputs of the 8th
//                                                      aten::convolution call becomes
//                                                      x * (1 + 0.05 u), u uniform in [-1, 1]
//   SDAA_EMU_PERTURB='aten::addmm#0:bias=0.5'          ... becomes x + 0.5
//   SDAA_EMU_PERTURB='aten::addmm:rel=0.3'             every call of aten::addmm
//
// Several perturbations are separated by ';'. A perturbation is a wrong *device* kernel: a call
// of an op that TORCH_SDAA_FALLBACK_OPS names (or that runs inside one) runs as a CPU op and is
// never perturbed, so falling back a perturbed op heals it. Calls on sdaa tensors (an operand on the device)
// are counted per op name, 0-based, from the start of the current step: a RecordFunction user scope named `modelzoo::step` (opened by the
// dump captures) restarts the count; without one, counting starts with the process. The op is
// seen through libtorch's RecordFunction callbacks, so the name is the dispatcher's (what the
// dumps record), and a call re-dispatched under a Python dispatch mode counts once. Only sdaa
// tensors are perturbed (the CPU side of a comparison stays exact); the noise is seeded, so a
// run is reproducible. Without the variable no callback is installed and nothing is slower; a
// malformed one fails every sdaa allocation with what is wrong (perturb.h).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "perturb.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr const char* kVariable = "SDAA_EMU_PERTURB";
constexpr const char* kStepScope = "modelzoo::step";
constexpr const char* kFallbackVariable = "TORCH_SDAA_FALLBACK_OPS";

struct Perturbation {
  std::string op;
  int64_t call = 0;  // -1: every call
  bool relative = true;  // rel= (else bias=)
  double amount = 0;
};

struct Config {
  std::vector<Perturbation> perturbations;
  std::set<std::string> fallback_ops;  // TORCH_SDAA_FALLBACK_OPS, as "aten::addmm"
  std::string error;  // why a variable could not be read, empty when all could
};

// `aten::convolution#7:rel=0.05` or `aten::addmm:rel=0.3`; empty on success, else what is wrong.
std::string parse_one(const std::string& item, Perturbation& p) {
  const auto colon = item.rfind(':');
  if (colon == std::string::npos || colon == 0 || item[colon - 1] == ':') {
    return "missing ':rel=<x>' or ':bias=<x>' after the op";
  }
  const std::string target = item.substr(0, colon);
  const auto hash = target.find('#');
  p.op = target.substr(0, hash);
  if (p.op.find("::") == std::string::npos) return "the op must be namespaced, e.g. aten::mm";
  char* end = nullptr;
  if (hash == std::string::npos) {
    p.call = -1;
  } else {
    const std::string call = target.substr(hash + 1);
    p.call = std::strtoll(call.c_str(), &end, 10);
    if (call.empty() || *end != '\0' || p.call < 0) {
      return "the call index must be an integer >= 0";
    }
  }
  const std::string kv = item.substr(colon + 1);
  const auto eq = kv.find('=');
  const std::string key = kv.substr(0, eq);
  if (eq == std::string::npos || (key != "rel" && key != "bias")) {
    return "expected rel=<x> or bias=<x> after ':'";
  }
  p.relative = key == "rel";
  const std::string value = kv.substr(eq + 1);
  p.amount = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0') return "the amount is not a number";
  return "";
}

Config parse(const char* spec) {
  Config config;
  if (spec == nullptr) return config;
  std::string rest = spec;
  while (!rest.empty()) {
    const auto semi = rest.find(';');
    const std::string item = rest.substr(0, semi);
    rest = semi == std::string::npos ? "" : rest.substr(semi + 1);
    if (item.empty()) continue;
    Perturbation p;
    const std::string why = parse_one(item, p);
    if (!why.empty()) {
      config.error = std::string("SDAA emulator: ") + kVariable + " item '" + item + "': " + why +
                     " (expected e.g. 'aten::convolution#7:rel=0.05', 'aten::mm#0:bias=0.5' or, "
                     "for every call, 'aten::addmm:rel=0.3')";
      return config;
    }
    config.perturbations.push_back(p);
  }
  return config;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// TORCH_SDAA_FALLBACK_OPS=addmm,aten::convolution,add.Tensor: the names as the real torch_sdaa
// takes them (public scripts write `embedding,embedding_dense_backward`), with or without
// `aten::` and an overload (every overload of the op falls back). A malformed name is an error;
// a well-formed name this torch has no op of is a warning, not an error: a list written for the
// card may name the vendor's own ops (`fused_adam`), which the emulator does not have.
void parse_fallback(const char* spec, Config& config) {
  if (spec == nullptr) return;
  std::set<std::string> known;
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    known.insert(name.name);
  }
  std::vector<std::string> unknown;
  std::string rest = spec;
  while (true) {
    const auto comma = rest.find(',');
    std::string item = trim(rest.substr(0, comma));
    if (!item.empty()) {
      std::string name = item;
      if (name.find("::") == std::string::npos) name = "aten::" + name;
      name = name.substr(0, name.find('.', name.find("::")));
      const std::string bare = name.substr(name.find("::") + 2);
      const std::string ns = name.substr(0, name.find("::"));
      auto word = [](const std::string& w) {
        return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        });
      };
      if (!word(bare) || !word(ns)) {
        config.error = std::string("SDAA emulator: ") + kFallbackVariable + " item '" + item +
                       "' is not an op name (expected op names separated by commas, with or "
                       "without 'aten::' and an overload, e.g. 'addmm,aten::convolution,add.Tensor')";
        return;
      }
      if (known.count(name)) {
        config.fallback_ops.insert(name);
      } else {
        unknown.push_back(item);
      }
    }
    if (comma == std::string::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (!unknown.empty()) {
    std::string names;
    for (const std::string& n : unknown) names += (names.empty() ? "" : ", ") + n;
    std::fprintf(stderr,
                 "SDAA emulator: warning: %s names ops this torch does not have: %s; they are "
                 "ignored (the vendor's own ops, such as fused_adam, do not exist on the "
                 "emulator)\n",
                 kFallbackVariable, names.c_str());
  }
}

// The other variables the real torch_sdaa reads: honoured, or refused by name.
void check_runtime_variables(Config& config) {
  const char* autofallback = std::getenv("TORCH_SDAA_RUNTIME_AUTOFALLBACK");
  if (autofallback != nullptr && *autofallback != '\0' && std::strcmp(autofallback, "0") != 0 &&
      std::strcmp(autofallback, "1") != 0) {
    config.error = std::string("SDAA emulator: TORCH_SDAA_RUNTIME_AUTOFALLBACK='") + autofallback +
                   "' is not valid: expected 0 or 1 (1: ops without a device kernel run on the "
                   "CPU; the emulator does that always)";
    return;
  }
  // Settings of the card's kernels the emulator has no counterpart of: said, never silent.
  static const char* const kNotEmulated[][2] = {
      {"TORCH_SDAA_AUTOLOAD", "the card's automatic CUDA-to-SDAA mapping (run `modelzoo migrate` "
                              "instead)"},
      {"TORCH_SDAA_CONV_USE_FP32", "the card's fp16 conversion inside fp32 convolutions"},
      {"TORCH_SDAA_CONV2D_BACKWARD_USE_FP32", "the card's fp16 conversion inside fp32 "
                                              "convolution backward"},
      {"TORCH_SDAA_BF16_CLIP", "the card's clipping of bf16 GEMM inputs"},
      {"TORCH_SDAA_CONV_WEIGHT_CHWN", "the card's CHWN weight layout"},
      {"TORCH_SDAA_ALLOC_CONF", "the card's caching allocator (the emulator has none)"},
  };
  for (const auto& v : kNotEmulated) {
    const char* value = std::getenv(v[0]);
    if (value != nullptr && *value != '\0') {
      std::fprintf(stderr, "SDAA emulator: warning: %s=%s is not emulated (%s); ignored\n", v[0],
                   value, v[1]);
    }
  }
}

Config read_config() {
  Config config = parse(std::getenv(kVariable));
  if (!config.error.empty()) return config;
  parse_fallback(std::getenv(kFallbackVariable), config);
  if (!config.error.empty()) return config;
  check_runtime_variables(config);
  return config;
}

// The callback stays registered in libtorch until the process ends, so it can fire after this
// library's static destructors ran (exit with autograd device threads still alive): the state it
// reads is allocated once and never destroyed.
const Config& config() {
  static const Config* c = new Config(read_config());
  return *c;
}

struct Calls {
  std::mutex mutex;
  std::unordered_map<std::string, int64_t> count;  // per op name since the step began
};
Calls& calls() {
  static Calls* c = new Calls;
  return *c;
}

// One call of an op; a re-dispatch of the same call (under a Python dispatch mode) shares it.
struct Call {
  bool counted = false;  // the innermost record, which ends first, counts the call
};

// This thread's open op records, innermost last.
struct Frame {
  std::string name;
  std::shared_ptr<Call> call;
};
thread_local std::vector<Frame> open_ops;

struct Context : at::ObserverContext {};

bool on_sdaa(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

// `k`: the call's index, which seeds its noise.
void perturb(const at::Tensor& t, const Perturbation& p, int64_t k) {
  if (!on_sdaa(t) || !at::isFloatingType(t.scalar_type()) || t.numel() == 0) {
    return;
  }
  // A CPU view of the device memory: writing through it changes the values without bumping
  // the sdaa tensor's version (autograd may have saved it) and without re-entering here.
  at::Tensor host = at::from_blob(t.data_ptr(), t.sizes(), t.strides(),
                                  t.options().device(at::kCPU));
  if (p.relative) {
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(0x5DAA + k);
    at::Tensor u = at::empty(t.sizes(), host.options().dtype(at::kFloat)).uniform_(-1, 1, gen);
    host.copy_(host.to(at::kFloat) * (u * p.amount + 1));
  } else {
    host.add_(p.amount);
  }
}

bool any_on_sdaa(const std::vector<c10::IValue>& values) {
  for (const c10::IValue& v : values) {
    if (v.isTensor() && on_sdaa(v.toTensor())) return true;
    if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) {
        if (on_sdaa(t)) return true;
      }
    }
  }
  return false;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  const std::string name = fn.name();
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    if (name == kStepScope) {
      std::lock_guard<std::mutex> lock(calls().mutex);
      calls().count.clear();
    }
    return nullptr;
  }
  auto outer = std::find_if(open_ops.rbegin(), open_ops.rend(),
                            [&](const Frame& f) { return f.name == name; });
  auto call = outer != open_ops.rend() ? outer->call : std::make_shared<Call>();
  open_ops.push_back({name, std::move(call)});
  return std::make_unique<Context>();
}

// Calls are counted when they end (the outputs tell whether the call ran on sdaa), and the
// innermost record of a call ends first: it counts, and perturbs what every caller then sees.
void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  if (ctx == nullptr || open_ops.empty()) return;  // a user scope
  Frame frame = std::move(open_ops.back());
  open_ops.pop_back();
  if (frame.call->counted) return;
  frame.call->counted = true;
  if (!any_on_sdaa(fn.outputs())) return;
  // A fallback op (or an op it called) ran on the CPU: no device kernel to be wrong.
  if (config().fallback_ops.count(frame.name)) return;
  for (const Frame& f : open_ops) {
    if (config().fallback_ops.count(f.name)) return;
  }
  int64_t k;
  {
    std::lock_guard<std::mutex> lock(calls().mutex);
    k = calls().count[frame.name]++;
  }
  const Perturbation* hit = nullptr;
  for (const Perturbation& p : config().perturbations) {
    if (p.op == frame.name && (p.call == k || p.call < 0)) hit = &p;
  }
  if (hit == nullptr) return;
  const Perturbation& p = *hit;
  if (p.call >= 0) {
    std::fprintf(stderr, "SDAA emulator: %s perturbs %s call %lld (%s=%g)\n", kVariable,
                 p.op.c_str(), static_cast<long long>(p.call), p.relative ? "rel" : "bias",
                 p.amount);
  } else if (k == 0) {
    std::fprintf(stderr, "SDAA emulator: %s perturbs every call of %s (%s=%g)\n", kVariable,
                 p.op.c_str(), p.relative ? "rel" : "bias", p.amount);
  }
  at::DisableRecordFunctionGuard no_records;
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  for (const c10::IValue& out : fn.outputs()) {
    if (out.isTensor()) {
      perturb(out.toTensor(), p, k);
    } else if (out.isTensorList()) {
      for (const at::Tensor& t : out.toTensorList()) perturb(t, p, k);
    }
  }
}

struct Install {
  Install() {
    if (config().perturbations.empty()) return;
    at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                              .needsOutputs(true)
                              .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  }
} install;

}  // namespace

namespace sdaa_emulator {
const std::string& perturb_error() { return config().error; }
bool is_fallback_op(const std::string& op) { return config().fallback_ops.count(op) > 0; }
bool any_fallback_ops() { return !config().fallback_ops.empty(); }
const std::set<std::string>& fallback_ops() { return config().fallback_ops; }
}  // namespace sdaa_emulator
