// Activation recompute (src/recompute.rs): a custom autograd function that runs a Rust
// callback (one transformer block's forward) without keeping its activations, and reruns it
// in backward. This is torch.utils.checkpoint's reentrant variant, which tch does not offer:
//
//   forward:  the callback runs under no_grad (autograd::Function's forward always does), so
//             only the block's inputs are kept; the RNG states (optionally) and the autocast
//             state are recorded.
//   backward: the inputs are detached (requiring grad where the graph needs theirs), the RNG
//             and autocast states of the forward are put back, the callback reruns with grad
//             on, and a nested backward from its outputs accumulates the block's parameter
//             gradients (leaves captured by the callback) and gives the inputs' gradients.
//
// RNG: with `preserve_rng` the CPU generator's state, and the input device's when it is not
// the CPU, are saved in forward and restored around the rerun (then put back), so dropout
// draws the same masks twice. Without it, a block using randomness would compute other
// gradients; the Rust side asks for it whenever dropout is on.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Generator.h>
#include <ATen/Context.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "protect.h"

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {
// Where a callback puts its outputs (or its error).
struct MzdRecomputeSink;
// Runs the block: `inputs` are `n` new at::Tensor* the callee owns; it calls
// mzd_recompute_push for each output (or mzd_recompute_fail once).
typedef void (*MzdBlockFn)(void* ctx, at::Tensor** inputs, int64_t n, MzdRecomputeSink* sink);
// Frees the callback's context (from whichever thread drops the last graph reference).
typedef void (*MzdDropFn)(void* ctx);
}

struct MzdRecomputeSink {
  std::vector<at::Tensor> outputs;
  bool failed = false;
  std::string error;
};

namespace {

// The Rust callback, owned by the autograd graph (a capsule in the node's saved data).
struct Callback : torch::CustomClassHolder {
  MzdBlockFn run;
  MzdDropFn drop;
  void* ctx;
  Callback(MzdBlockFn r, MzdDropFn d, void* c) : run(r), drop(d), ctx(c) {}
  ~Callback() override {
    if (drop != nullptr) drop(ctx);
  }
  std::vector<at::Tensor> call(const std::vector<at::Tensor>& inputs) {
    std::vector<at::Tensor*> owned;
    owned.reserve(inputs.size());
    for (const at::Tensor& t : inputs) owned.push_back(new at::Tensor(t));
    MzdRecomputeSink sink;
    run(ctx, owned.data(), static_cast<int64_t>(owned.size()), &sink);
    if (sink.failed) throw std::runtime_error("recomputed block failed: " + sink.error);
    return std::move(sink.outputs);
  }
};

// The device types whose autocast state a block may run under.
const c10::DeviceType kAutocastTypes[] = {c10::DeviceType::CPU, c10::DeviceType::CUDA,
                                          c10::DeviceType::PrivateUse1};

std::vector<at::Tensor> rng_states(const c10::Device& device) {
  std::vector<at::Tensor> out;
  at::Generator cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    out.push_back(cpu.get_state());
  }
  if (device.type() != c10::DeviceType::CPU) {
    at::Generator gen = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    out.push_back(gen.get_state());
  }
  return out;
}

void set_rng_states(const c10::Device& device, const std::vector<at::Tensor>& states) {
  at::Generator cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_state(states.at(0));
  }
  if (device.type() != c10::DeviceType::CPU && states.size() > 1) {
    at::Generator gen = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(states.at(1));
  }
}

struct Autocast {
  bool enabled[3];
  c10::ScalarType dtype[3];
  static Autocast current() {
    Autocast a{};
    for (int i = 0; i < 3; ++i) {
      a.enabled[i] = at::autocast::is_autocast_enabled(kAutocastTypes[i]);
      a.dtype[i] = at::autocast::get_autocast_dtype(kAutocastTypes[i]);
    }
    return a;
  }
  void apply() const {
    for (int i = 0; i < 3; ++i) {
      at::autocast::set_autocast_enabled(kAutocastTypes[i], enabled[i]);
      at::autocast::set_autocast_dtype(kAutocastTypes[i], dtype[i]);
    }
  }
};

struct Recompute : public torch::autograd::Function<Recompute> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                at::TensorList input_list,
                                                c10::intrusive_ptr<Callback> cb,
                                                bool preserve_rng) {
    // A TensorList (not a std::vector) so that autograd::Function records each tensor as an
    // input of the node.
    std::vector<at::Tensor> inputs = input_list.vec();
    c10::Device device = inputs.empty() ? c10::Device(c10::kCPU) : inputs[0].device();
    if (preserve_rng) {
      ctx->saved_data["rng"] = c10::List<at::Tensor>(rng_states(device));
    }
    Autocast ac = Autocast::current();
    std::vector<int64_t> flags;
    for (int i = 0; i < 3; ++i) {
      flags.push_back(ac.enabled[i] ? 1 : 0);
      flags.push_back(static_cast<int64_t>(ac.dtype[i]));
    }
    ctx->saved_data["autocast"] = flags;
    ctx->saved_data["cb"] = c10::IValue::make_capsule(cb);
    ctx->save_for_backward(inputs);
    return cb->call(inputs);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    auto cb = c10::static_intrusive_pointer_cast<Callback>(ctx->saved_data["cb"].toCapsule());
    std::vector<at::Tensor> detached;
    for (size_t i = 0; i < saved.size(); ++i) {
      at::Tensor d = saved[i].detach();
      if (ctx->needs_input_grad(i) && d.is_floating_point()) d.requires_grad_(true);
      detached.push_back(d);
    }
    c10::Device device = saved.empty() ? c10::Device(c10::kCPU) : saved[0].device();
    Autocast forward_ac{};
    auto flags = ctx->saved_data["autocast"].toIntVector();
    for (int i = 0; i < 3; ++i) {
      forward_ac.enabled[i] = flags[2 * i] != 0;
      forward_ac.dtype[i] = static_cast<c10::ScalarType>(flags[2 * i + 1]);
    }
    std::vector<at::Tensor> outputs;
    {
      at::AutoGradMode grad_on(true);
      bool preserve = ctx->saved_data.count("rng") > 0;
      std::vector<at::Tensor> now_rng;
      if (preserve) {
        now_rng = rng_states(device);
        auto list = ctx->saved_data["rng"].toTensorList();
        std::vector<at::Tensor> forward_rng = list.vec();
        set_rng_states(device, forward_rng);
      }
      Autocast now_ac = Autocast::current();
      forward_ac.apply();
      at::autocast::increment_nesting();
      try {
        outputs = cb->call(detached);
      } catch (...) {
        if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
        now_ac.apply();
        if (preserve) set_rng_states(device, now_rng);
        throw;
      }
      if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
      now_ac.apply();
      if (preserve) set_rng_states(device, now_rng);
      std::vector<at::Tensor> roots, root_grads;
      for (size_t i = 0; i < outputs.size() && i < grads.size(); ++i) {
        if (outputs[i].requires_grad() && grads[i].defined()) {
          roots.push_back(outputs[i]);
          root_grads.push_back(grads[i]);
        }
      }
      if (!roots.empty()) torch::autograd::backward(roots, root_grads);
    }
    torch::autograd::variable_list out;
    for (const at::Tensor& d : detached) {
      out.push_back(d.requires_grad() ? d.grad() : at::Tensor());
    }
    // No gradient for the callback and the flag (forward's non-tensor arguments).
    out.emplace_back();
    out.emplace_back();
    return out;
  }
};

}  // namespace

extern "C" {

void mzd_recompute_push(MzdRecomputeSink* sink, const at::Tensor* t) {
  sink->outputs.push_back(*t);
}

void mzd_recompute_fail(MzdRecomputeSink* sink, const char* message, int64_t len) {
  sink->failed = true;
  sink->error.assign(message, static_cast<size_t>(len));
}

// Runs `run(ctx, inputs)` as a recomputed block (see the top of this file); each output is
// handed to `push(list, t)`. `ctx` is owned from here on: `drop(ctx)` is called once no graph
// needs it (at once when forward fails).
char* mzd_recompute(const at::Tensor* const* inputs, int64_t n, MzdBlockFn run, MzdDropFn drop,
                    void* ctx, int preserve_rng, void (*push)(void* list, const at::Tensor* t),
                    void* list) {
  MZD_PROTECT({
    auto cb = c10::make_intrusive<Callback>(run, drop, ctx);
    torch::autograd::variable_list in;
    for (int64_t i = 0; i < n; ++i) in.push_back(*inputs[i]);
    auto outs = Recompute::apply(at::TensorList(in), cb, preserve_rng != 0);
    for (const at::Tensor& o : outs) push(list, &o);
  })
}

}  // extern "C"
