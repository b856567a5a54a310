// libtorch's c10d for device-sdaa (see src/dist.rs): the rendezvous store, process groups
// (Gloo on the CPU; TCCL, an NCCL-shaped collective library, behind a c10d Backend on SDAA;
// on CUDA, ProcessGroupNCCL from the separate nccl.cpp library) and DDP's own bucketed
// gradient reducer, `c10d::Reducer`.
//
// Same conventions as shim.cpp: tensors arrive as `at::Tensor*`, every entry point returns
// null or a malloc'ed error string (freed with mzd_free_string), no exception crosses into
// Rust. Built with -DUSE_C10D_GLOO when the gloo headers (Debian libgloo-dev) are present.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>
#ifdef USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#include <chrono>
#include <cstdint>
#include "handles.h"
#include "protect.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

std::vector<at::Tensor> tensors_of(at::Tensor* const* ts, size_t n) {
  std::vector<at::Tensor> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(*ts[i]);
  return out;
}
}  // namespace

// The NCCL-shaped collective API (NCCL and TCCL share signatures, dtype and op numbering):
// what the Rust side resolved from the dlopen'ed library.
struct MzdCclApi {
  int (*all_reduce)(const void* send, void* recv, size_t count, int dtype, int op, void* comm,
                    void* stream);
  int (*broadcast)(const void* send, void* recv, size_t count, int dtype, int root, void* comm,
                   void* stream);
  const char* (*error_string)(int code);
};

// MzdStore and MzdGroup (handles.h) are shared with nccl.cpp.
struct MzdReducer {
  std::unique_ptr<c10d::Reducer> reducer;
};

namespace {
// A collective that already ran (the NCCL-shaped calls here complete before returning, on
// the default stream): its future holds the result tensors, as c10d's Reducer expects.
class CompletedWork : public c10d::Work {
 public:
  CompletedWork(std::vector<at::Tensor> result, c10d::OpType op)
      : c10d::Work(-1, op),
        future_(c10::make_intrusive<c10::ivalue::Future>(
            c10::ListType::create(c10::TensorType::get()))) {
    future_->markCompleted(c10::IValue(std::move(result)));
    finish();
  }
  bool isCompleted() override { return true; }
  bool isSuccess() const override { return true; }
  bool wait(std::chrono::milliseconds /*timeout*/) override { return true; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// NCCL/TCCL `ncclDataType_t` for a tensor's dtype.
int ccl_dtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kChar: return 0;
    case at::kByte:
    case at::kBool: return 1;
    case at::kInt: return 2;
    case at::kLong: return 4;
    case at::kHalf: return 6;
    case at::kFloat: return 7;
    case at::kDouble: return 8;
    case at::kBFloat16: return 9;
    default: TORCH_CHECK(false, "collective on dtype ", t.scalar_type(), " is not supported");
  }
}

int ccl_op(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return 0;
    case c10d::ReduceOp::PRODUCT: return 1;
    case c10d::ReduceOp::MAX: return 2;
    case c10d::ReduceOp::MIN: return 3;
    case c10d::ReduceOp::AVG: return 4;
    default: TORCH_CHECK(false, "reduce op ", static_cast<int>(op.op_), " is not supported");
  }
}

// A c10d Backend over an NCCL-shaped library: what ProcessGroupNCCL is to NCCL, reduced to
// the collectives DDP uses (allreduce, broadcast). Calls run on the default stream and are
// complete when they return.
class CclBackend : public c10d::Backend {
 public:
  CclBackend(int rank, int size, MzdCclApi api, void* comm, std::string name)
      : c10d::Backend(rank, size), api_(api), comm_(comm), name_(std::move(name)) {}

  const std::string getBackendName() const override { return name_; }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    for (auto& t : tensors) {
      check_dense(t);
      call("allreduce", api_.all_reduce(t.data_ptr(), t.data_ptr(), t.numel(), ccl_dtype(t),
                                        ccl_op(opts.reduceOp), comm_, nullptr));
    }
    return c10::make_intrusive<CompletedWork>(tensors, c10d::OpType::ALLREDUCE);
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    for (auto& t : tensors) {
      check_dense(t);
      call("broadcast", api_.broadcast(t.data_ptr(), t.data_ptr(), t.numel(), ccl_dtype(t),
                                       static_cast<int>(opts.rootRank), comm_, nullptr));
    }
    return c10::make_intrusive<CompletedWork>(tensors, c10d::OpType::BROADCAST);
  }

 private:
  static void check_dense(const at::Tensor& t) {
    TORCH_CHECK(t.is_contiguous() && !t.is_sparse(),
                "collective needs a dense contiguous tensor");
  }
  void call(const char* what, int code) {
    if (code == 0) return;
    const char* msg = api_.error_string != nullptr ? api_.error_string(code) : nullptr;
    TORCH_CHECK(false, name_, " ", what, " failed with error ", code, ": ",
                msg != nullptr ? msg : "unknown error");
  }

  MzdCclApi api_;
  void* comm_;
  std::string name_;
};

// The Reducer takes timings per device type; libtorch registers timers for CPU and CUDA
// only, so out-of-tree devices (PrivateUse1) get this host-clock one.
class HostTimer : public c10d::Timer {
 public:
  explicit HostTimer(c10::Device /*device*/) {}
  std::optional<int64_t> measureDifference(Event start, Event end) override {
    auto s = getTimestamp(start);
    auto e = getTimestamp(end);
    if (!s || !e || *e < *s) return std::nullopt;
    return *e - *s;
  }
};

void allreduce_sum(const c10::intrusive_ptr<c10d::ProcessGroup>& pg, at::Tensor& t) {
  std::vector<at::Tensor> ts{t};
  pg->allreduce(ts)->wait();
}

// SyncBatchNorm's training forward/backward over a process group, what
// torch.nn.SyncBatchNorm computes: batch statistics over every rank's batch (one allreduce of
// [sum, sum of squares, count] forward, one of [sum dy, sum dy*(x-mean)] backward); weight and
// bias gradients stay local (DDP's reducer averages them).
struct SyncBatchNorm : public torch::autograd::Function<SyncBatchNorm> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& weight, const at::Tensor& bias,
                            at::Tensor running_mean, at::Tensor running_var, double momentum,
                            double eps, int64_t group) {
    auto pg = reinterpret_cast<MzdGroup*>(group)->pg;
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
    at::Tensor xf = x.to(at::kFloat);
    int64_t channels = x.size(1);
    at::Tensor stats = at::cat({xf.sum(dims), (xf * xf).sum(dims),
                                at::full({1}, static_cast<double>(x.numel() / channels),
                                         xf.options())});
    allreduce_sum(pg, stats);
    at::Tensor count = stats.narrow(0, 2 * channels, 1);
    at::Tensor mean = stats.narrow(0, 0, channels) / count;
    at::Tensor var = (stats.narrow(0, channels, channels) / count - mean * mean).clamp_min(0);
    at::Tensor invstd = (var + eps).rsqrt();
    {
      at::NoGradGuard no_grad;
      at::Tensor unbiased = var * count / (count - 1).clamp_min(1);
      running_mean.mul_(1 - momentum).add_(mean.to(running_mean.scalar_type()) * momentum);
      running_var.mul_(1 - momentum).add_(unbiased.to(running_var.scalar_type()) * momentum);
    }
    std::vector<int64_t> shape(x.dim(), 1);
    shape[1] = channels;
    at::Tensor xhat = (xf - mean.view(shape)) * invstd.view(shape);
    at::Tensor y = xhat * weight.to(at::kFloat).view(shape) + bias.to(at::kFloat).view(shape);
    ctx->save_for_backward({xf, weight, mean, invstd, count});
    ctx->saved_data["group"] = group;
    return y.to(x.scalar_type());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &xf = saved[0], &weight = saved[1], &mean = saved[2], &invstd = saved[3],
                     &count = saved[4];
    auto pg = reinterpret_cast<MzdGroup*>(ctx->saved_data["group"].toInt())->pg;
    at::Tensor dy = grads[0].to(at::kFloat);
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < xf.dim(); ++d) dims.push_back(d);
    std::vector<int64_t> shape(xf.dim(), 1);
    int64_t channels = xf.size(1);
    shape[1] = channels;
    at::Tensor xmu = xf - mean.view(shape);
    at::Tensor local = at::cat({dy.sum(dims), (dy * xmu).sum(dims)});
    at::Tensor grad_weight = (local.narrow(0, channels, channels) * invstd).to(weight.scalar_type());
    at::Tensor grad_bias = local.narrow(0, 0, channels).to(weight.scalar_type());
    at::Tensor total = local.clone();
    allreduce_sum(pg, total);
    at::Tensor mean_dy = (total.narrow(0, 0, channels) / count).view(shape);
    at::Tensor mean_dy_xmu = (total.narrow(0, channels, channels) / count).view(shape);
    at::Tensor inv = invstd.view(shape);
    at::Tensor dx = (dy - mean_dy - xmu * inv * inv * mean_dy_xmu) * inv *
                    weight.to(at::kFloat).view(shape);
    return {dx.to(grads[0].scalar_type()), grad_weight, grad_bias, at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

c10::intrusive_ptr<c10d::ProcessGroup> wrap(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                            int size, c10::DeviceType device,
                                            c10d::ProcessGroup::BackendType type,
                                            c10::intrusive_ptr<c10d::Backend> backend) {
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  pg->setBackend(device, type, backend);
  pg->setDefaultBackend(type);
  pg->setGroupName("0");
  return pg;
}
}  // namespace

extern "C" {

// c10's log threshold (0 INFO, 1 WARNING, 2 ERROR, 3 FATAL), which also gates c10d's own
// logging (C10D_WARNING / C10D_ERROR: connection retries, a failed rendezvous's stack).
void mzd_set_cpp_log_level(int level) { FLAGS_caffe2_log_level = level; }

// Rendezvous store at host:port; `is_server` binds and serves it (fails if the port is taken),
// else connects, retrying until `timeout_ms`. `prefix` ("" for none) namespaces every key.
char* mzd_store_open(const char* host, int port, int is_server, int64_t timeout_ms,
                     const char* prefix, MzdStore** out) {
  MZD_PROTECT({
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<std::uint16_t>(port);
    opts.isServer = is_server != 0;
    opts.waitWorkers = false;
    opts.timeout = std::chrono::milliseconds(timeout_ms);
    c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::TCPStore>(host, opts);
    if (prefix != nullptr && prefix[0] != '\0') {
      store = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
    }
    *out = new MzdStore{store};
  })
}

void mzd_store_free(MzdStore* s) {
  try {
    delete s;
  } catch (...) {
  }
}

char* mzd_store_set(MzdStore* s, const char* key, const uint8_t* data, size_t len) {
  MZD_PROTECT({ s->store->set(key, std::vector<uint8_t>(data, data + len)); })
}

// Blocks until `key` exists (up to the store's timeout); `*data` is malloc'ed (mzd_free_string).
char* mzd_store_get(MzdStore* s, const char* key, uint8_t** data, size_t* len) {
  MZD_PROTECT({
    std::vector<uint8_t> v = s->store->get(key);
    *data = static_cast<uint8_t*>(std::malloc(v.size() + 1));
    if (*data == nullptr) throw std::bad_alloc();
    std::memcpy(*data, v.data(), v.size());
    *len = v.size();
  })
}

char* mzd_store_add(MzdStore* s, const char* key, int64_t delta, int64_t* out) {
  MZD_PROTECT({ *out = s->store->add(key, delta); })
}

char* mzd_store_check(MzdStore* s, const char* key, int* present) {
  MZD_PROTECT({ *present = s->store->check({std::string(key)}) ? 1 : 0; })
}

// 1 when this build has ProcessGroupGloo (gloo headers found at build time).
int mzd_have_gloo(void) {
#ifdef USE_C10D_GLOO
  return 1;
#else
  return 0;
#endif
}

// A Gloo process group for CPU tensors. `hostname` ("" = this machine's name, as PyTorch does)
// is the address the other ranks reach this one on; `interface` (e.g. GLOO_SOCKET_IFNAME)
// wins when set.
char* mzd_group_gloo(MzdStore* s, int rank, int size, int64_t timeout_ms, const char* hostname,
                     const char* interface, MzdGroup** out) {
#ifdef USE_C10D_GLOO
  MZD_PROTECT({
    auto opts = c10d::ProcessGroupGloo::Options::create(std::chrono::milliseconds(timeout_ms));
    if (interface != nullptr && interface[0] != '\0') {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
    } else if (hostname != nullptr && hostname[0] != '\0') {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(hostname));
    } else {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    auto store = c10::make_intrusive<c10d::PrefixStore>("gloo/", s->store);
    auto backend = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
    *out = new MzdGroup{wrap(s->store, rank, size, c10::kCPU,
                             c10d::ProcessGroup::BackendType::GLOO, backend)};
  })
#else
  (void)s; (void)rank; (void)size; (void)timeout_ms; (void)hostname; (void)interface; (void)out;
  return mzd::dup_string(
      "this build has no Gloo process group: the gloo headers were missing when device-sdaa "
      "was compiled; install them (apt-get install libgloo-dev, or `make setup`) and rebuild");
#endif
}

// A process group over an initialised NCCL-shaped communicator `comm` for tensors of
// `device_type` (c10::DeviceType: 1 CUDA, 20 PrivateUse1). `name` is the backend name.
char* mzd_group_ccl(MzdStore* s, int rank, int size, const MzdCclApi* api, void* comm,
                    int device_type, const char* name, MzdGroup** out) {
  MZD_PROTECT({
    auto backend = c10::make_intrusive<CclBackend>(rank, size, *api, comm, name);
    auto device = static_cast<c10::DeviceType>(device_type);
    auto type = device == c10::kCUDA ? c10d::ProcessGroup::BackendType::NCCL
                                     : c10d::ProcessGroup::BackendType::CUSTOM;
    *out = new MzdGroup{wrap(s->store, rank, size, device, type, backend)};
  })
}

// Another handle to the same process group.
char* mzd_group_clone(MzdGroup* g, MzdGroup** out) { MZD_PROTECT({ *out = new MzdGroup{g->pg}; }) }

// Training-mode batch norm with statistics over all ranks of `g` (torch.nn.SyncBatchNorm);
// updates the running statistics in place; differentiable. `*out` is a new tensor.
char* mzd_sync_batch_norm(MzdGroup* g, const at::Tensor* x, const at::Tensor* weight,
                          const at::Tensor* bias, at::Tensor* running_mean,
                          at::Tensor* running_var, double momentum, double eps, at::Tensor** out) {
  MZD_PROTECT({
    *out = new at::Tensor(SyncBatchNorm::apply(*x, *weight, *bias, *running_mean, *running_var,
                                               momentum, eps, reinterpret_cast<int64_t>(g)));
  })
}

void mzd_group_free(MzdGroup* g) {
  try {
    delete g;
  } catch (...) {
  }
}

// In-place allreduce of each tensor (op: 0 sum, 1 product, 2 max, 3 min, 4 avg); waits.
char* mzd_group_allreduce(MzdGroup* g, at::Tensor* const* ts, size_t n, int op) {
  MZD_PROTECT({
    static const c10d::ReduceOp::RedOpType ops[] = {
        c10d::ReduceOp::SUM, c10d::ReduceOp::PRODUCT, c10d::ReduceOp::MAX,
        c10d::ReduceOp::MIN, c10d::ReduceOp::AVG};
    TORCH_CHECK(op >= 0 && op < 5, "unknown reduce op ", op);
    auto tensors = tensors_of(ts, n);
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp(ops[op]);
    g->pg->allreduce(tensors, opts)->wait();
  })
}

// Rank `root`'s values into every tensor on all ranks, flattened into few large messages.
char* mzd_group_broadcast_coalesced(MzdGroup* g, at::Tensor* const* ts, size_t n, int root) {
  MZD_PROTECT({
    auto tensors = tensors_of(ts, n);
    c10d::broadcast_coalesced(g->pg, tensors, 256 * 1024 * 1024, root);
  })
}

// DDP's reducer over `params` (leaf variables that require grad, in module order): gradients
// averaged over the group in buckets, each launched as soon as its gradients are ready during
// backward. As torch.nn.parallel.DistributedDataParallel does, the first iteration uses one
// bucket and records the order gradients become ready; buckets are then rebuilt in that
// order with caps (first_cap_bytes, cap_bytes). Gradients become views of the buckets
// (`gradient_as_bucket_view=True`): the averaged bucket is the gradient, with no copy back
// into separate gradient tensors after each allreduce (docs/benchmarks.md, issue #26 item 5).
char* mzd_reducer_new(MzdGroup* g, at::Tensor* const* params, const char* const* names, size_t n,
                      int64_t cap_bytes, int64_t first_cap_bytes, MzdReducer** out) {
  MZD_PROTECT({
    TORCH_CHECK(n > 0, "DDP needs at least one parameter that requires grad");
    auto tensors = tensors_of(params, n);
    c10::Device device = tensors[0].device();
    if (!c10d::TimerRegistry()->Has(device.type())) {
      c10d::TimerRegistry()->Register(device.type(), [](c10::Device d) {
        return std::unique_ptr<c10d::Timer>(new HostTimer(d));
      });
    }
    std::unordered_map<size_t, std::string> param_names;
    for (size_t i = 0; i < n; ++i) param_names[i] = names[i];
    auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(
        tensors, {static_cast<size_t>(std::numeric_limits<int64_t>::max())},
        std::vector<bool>(n, false));
    std::reverse(buckets.begin(), buckets.end());
    std::vector<int64_t> caps(limits.rbegin(), limits.rend());
    auto reducer = std::make_unique<c10d::Reducer>(
        tensors, buckets, g->pg, std::vector<bool>(n, false), cap_bytes,
        /*find_unused_parameters=*/false, /*gradient_as_bucket_view=*/true, param_names,
        first_cap_bytes, /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false,
        caps);
    *out = new MzdReducer{std::move(reducer)};
  })
}

// Before a forward pass whose backward must synchronise (DDP's `_pre_forward`): count the
// iteration and, after the first, rebuild the buckets in gradient-ready order (a collective:
// every rank calls it at the same iteration).
char* mzd_reducer_before_forward(MzdReducer* r) {
  MZD_PROTECT({
    r->reducer->prepare_for_forward();
    r->reducer->rebuild_buckets();
  })
}

// Arm the autograd hooks for the next backward: its gradients are reduced. Without this call
// a backward only accumulates locally (DDP's `no_sync`).
char* mzd_reducer_before_backward(MzdReducer* r) {
  MZD_PROTECT({ r->reducer->prepare_for_backward({}); })
}

void mzd_reducer_free(MzdReducer* r) {
  try {
    delete r;
  } catch (...) {
  }
}

}  // extern "C"
