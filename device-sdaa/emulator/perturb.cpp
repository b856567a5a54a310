// SDAA EMULATOR — SDAA_EMU_PERTURB: the emulated device computes one op call wrong, on purpose,
// so precision tools (`modelzoo diff`, docs/diff.md) have a ground truth to be tested against.
//
//   SDAA_EMU_PERTURB='aten::convolution#7:rel=0.05'   every element x of the outputs of the 8th
//                                                      aten::convolution call becomes
//                                                      x * (1 + 0.05 u), u uniform in [-1, 1]
//   SDAA_EMU_PERTURB='aten::addmm#0:bias=0.5'          ... becomes x + 0.5
//
// Several perturbations are separated by ';'. Calls on sdaa tensors (an operand on the device)
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

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr const char* kVariable = "SDAA_EMU_PERTURB";
constexpr const char* kStepScope = "modelzoo::step";

struct Perturbation {
  std::string op;
  int64_t call = 0;
  bool relative = true;  // rel= (else bias=)
  double amount = 0;
};

struct Config {
  std::vector<Perturbation> perturbations;
  std::string error;  // why the variable could not be read, empty when it could
};

// `aten::convolution#7:rel=0.05`; an empty string on success, else what is wrong.
std::string parse_one(const std::string& item, Perturbation& p) {
  const auto hash = item.find('#');
  const auto colon = item.find(':', hash == std::string::npos ? 0 : hash);
  if (hash == std::string::npos || colon == std::string::npos) return "missing '#<call>:'";
  p.op = item.substr(0, hash);
  if (p.op.find("::") == std::string::npos) return "the op must be namespaced, e.g. aten::mm";
  const std::string call = item.substr(hash + 1, colon - hash - 1);
  char* end = nullptr;
  p.call = std::strtoll(call.c_str(), &end, 10);
  if (call.empty() || *end != '\0' || p.call < 0) return "the call index must be an integer >= 0";
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
                     " (expected e.g. 'aten::convolution#7:rel=0.05' or 'aten::mm#0:bias=0.5')";
      return config;
    }
    config.perturbations.push_back(p);
  }
  return config;
}

// The callback stays registered in libtorch until the process ends, so it can fire after this
// library's static destructors ran (exit with autograd device threads still alive): the state it
// reads is allocated once and never destroyed.
const Config& config() {
  static const Config* c = new Config(parse(std::getenv(kVariable)));
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

void perturb(const at::Tensor& t, const Perturbation& p) {
  if (!on_sdaa(t) || !at::isFloatingType(t.scalar_type()) || t.numel() == 0) {
    return;
  }
  // A CPU view of the device memory: writing through it changes the values without bumping
  // the sdaa tensor's version (autograd may have saved it) and without re-entering here.
  at::Tensor host = at::from_blob(t.data_ptr(), t.sizes(), t.strides(),
                                  t.options().device(at::kCPU));
  if (p.relative) {
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(0x5DAA + p.call);
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
  int64_t k;
  {
    std::lock_guard<std::mutex> lock(calls().mutex);
    k = calls().count[frame.name]++;
  }
  const Perturbation* hit = nullptr;
  for (const Perturbation& p : config().perturbations) {
    if (p.op == frame.name && p.call == k) hit = &p;
  }
  if (hit == nullptr) return;
  const Perturbation& p = *hit;
  std::fprintf(stderr, "SDAA emulator: %s perturbs %s call %lld (%s=%g)\n", kVariable,
               p.op.c_str(), static_cast<long long>(p.call), p.relative ? "rel" : "bias",
               p.amount);
  at::DisableRecordFunctionGuard no_records;
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  for (const c10::IValue& out : fn.outputs()) {
    if (out.isTensor()) {
      perturb(out.toTensor(), p);
    } else if (out.isTensorList()) {
      for (const at::Tensor& t : out.toTensorList()) perturb(t, p);
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
}  // namespace sdaa_emulator
