// Batch norm fused with the ReLU after it, and with the residual add between them, for
// training on the CPU in channels-last (ResNet's bn → relu and bn → + identity → relu):
//
//   y = relu(batch_norm(x) [+ residual])
//
// Neither tch nor PyTorch has this op: eager runs batch norm, the add and the ReLU as at least
// three passes over memory forward (four with the add) and three backward (ReLU's mask, then
// batch norm's two), where this makes two each. In channels-last an NHWC tensor is a
// [rows = N·H·W, C] matrix, so every pass is a loop over rows (split across libtorch's
// intra-op threads: at::parallel_for is inline, hence -fopenmp in build.rs) of a loop over
// channels (vectorised by the compiler; the entry points are cloned for AVX2 and AVX-512F and
// picked at load time).
//
//   forward:  one pass for each channel's sum and sum of squares (per thread; see kBlock),
//             then y = relu(x·scale + shift [+ residual]) in one pass. The running
//             statistics are updated as torch.nn.BatchNorm2d does (momentum, unbiased var).
//   backward: g = dy where y > 0 (ReLU's gradient, also the residual's), one pass for Σg and
//             Σg·(x − mean), then dx = g·k1 + x·k2 + k3 in one pass.
//
// fp32 tensors, or bf16 ones (CPU autocast's convolution outputs) with fp32 weight and
// statistics, computed in fp32 and rounded once where eager rounds after each op.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include "protect.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

#define MZD_INLINE inline __attribute__((always_inline))
#define MZD_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))

MZD_INLINE float load(const float* p, int64_t i) { return p[i]; }
MZD_INLINE float load(const uint16_t* p, int64_t i) {
  const uint32_t bits = static_cast<uint32_t>(p[i]) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
MZD_INLINE void store(float* p, int64_t i, float v) { p[i] = v; }
// Round to nearest even, NaN kept NaN (c10::BFloat16's conversion).
MZD_INLINE void store(uint16_t* p, int64_t i, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  p[i] = (bits & 0x7fffffffu) > 0x7f800000u ? uint16_t{0x7fc0} : static_cast<uint16_t>(rounded);
}
// ReLU that keeps NaN (torch.relu does): NaN < 0 is false.
MZD_INLINE float relu(float v) { return v < 0.f ? 0.f : v; }

// Rows are summed in blocks of kBlock into fp32 accumulators, each block's sums then added
// into the caller's fp64 ones: vector-wide fp32 adds for every element, fp64 precision across
// blocks (a channel can span millions of rows).
constexpr int64_t kBlock = 32;

// Σx and Σx² per channel over `rows` rows, added into sum / sq; `acc` is 2·c floats of scratch.
template <typename T>
MZD_INLINE void stats(const T* __restrict x, int64_t rows, int64_t c, double* __restrict sum,
                      double* __restrict sq, float* __restrict acc) {
  float* __restrict s = acc;
  float* __restrict q = acc + c;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    for (int64_t j = 0; j < 2 * c; ++j) acc[j] = 0.f;
    for (int64_t r = r0; r < std::min(rows, r0 + kBlock); ++r, x += c)
      for (int64_t j = 0; j < c; ++j) {
        const float v = load(x, j);
        s[j] += v;
        q[j] += v * v;
      }
    for (int64_t j = 0; j < c; ++j) {
      sum[j] += s[j];
      sq[j] += q[j];
    }
  }
}

// y = relu(x·scale + shift [+ res]).
template <typename T>
MZD_INLINE void apply(const T* __restrict x, const T* __restrict res, T* __restrict y,
                      int64_t rows, int64_t c, const float* __restrict scale,
                      const float* __restrict shift) {
  if (res != nullptr) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0, o = r * c; j < c; ++j)
        store(y, o + j, relu(load(x, o + j) * scale[j] + shift[j] + load(res, o + j)));
  } else {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0, o = r * c; j < c; ++j)
        store(y, o + j, relu(load(x, o + j) * scale[j] + shift[j]));
  }
}

// ReLU's gradient: dy where the output is positive. Both loads unconditional, so the select
// vectorises without masked loads (which 16-bit elements lack before AVX-512BW).
template <typename T>
MZD_INLINE float masked(const T* dy, const T* y, int64_t i) {
  const float d = load(dy, i), out = load(y, i);
  return out > 0.f ? d : 0.f;
}

// g = dy·[y > 0] (written to `g_out` when given), Σg and Σg·(x − mean) added into sg / sgx;
// `acc` is 2·c floats of scratch.
template <typename T>
MZD_INLINE void grad_sums(const T* __restrict dy, const T* __restrict y, const T* __restrict x,
                          T* __restrict g_out, int64_t rows, int64_t c,
                          const float* __restrict mean, double* __restrict sg,
                          double* __restrict sgx, float* __restrict acc) {
  float* __restrict s = acc;
  float* __restrict sx = acc + c;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    for (int64_t j = 0; j < 2 * c; ++j) acc[j] = 0.f;
    const int64_t r1 = std::min(rows, r0 + kBlock);
    if (g_out != nullptr) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0, o = r * c; j < c; ++j) {
          const float g = masked(dy, y, o + j);
          s[j] += g;
          sx[j] += g * (load(x, o + j) - mean[j]);
          store(g_out, o + j, g);
        }
    } else {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0, o = r * c; j < c; ++j) {
          const float g = masked(dy, y, o + j);
          s[j] += g;
          sx[j] += g * (load(x, o + j) - mean[j]);
        }
    }
    for (int64_t j = 0; j < c; ++j) {
      sg[j] += s[j];
      sgx[j] += sx[j];
    }
  }
}

// dx = g·k1 + x·k2 + k3, g = dy·[y > 0].
template <typename T>
MZD_INLINE void grad_input(const T* __restrict dy, const T* __restrict y, const T* __restrict x,
                           T* __restrict dx, int64_t rows, int64_t c, const float* __restrict k1,
                           const float* __restrict k2, const float* __restrict k3) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0, o = r * c; j < c; ++j)
      store(dx, o + j, masked(dy, y, o + j) * k1[j] + load(x, o + j) * k2[j] + k3[j]);
}

// The kernels of one element type, for the templates below.
template <typename T>
struct Kernels;

// The entry points the compiler clones per instruction set, one set per element type, and
// their Kernels<T>.
#define MZD_KERNELS(T)                                                                          \
  MZD_CLONES void stats_##T(const T* x, int64_t rows, int64_t c, double* sum, double* sq,      \
                            float* acc) {                                                       \
    stats(x, rows, c, sum, sq, acc);                                                            \
  }                                                                                             \
  MZD_CLONES void apply_##T(const T* x, const T* res, T* y, int64_t rows, int64_t c,            \
                            const float* scale, const float* shift) {                           \
    apply(x, res, y, rows, c, scale, shift);                                                    \
  }                                                                                             \
  MZD_CLONES void grad_sums_##T(const T* dy, const T* y, const T* x, T* g_out, int64_t rows,    \
                                int64_t c, const float* mean, double* sg, double* sgx,          \
                                float* acc) {                                                   \
    grad_sums(dy, y, x, g_out, rows, c, mean, sg, sgx, acc);                                    \
  }                                                                                             \
  MZD_CLONES void grad_input_##T(const T* dy, const T* y, const T* x, T* dx, int64_t rows,      \
                                 int64_t c, const float* k1, const float* k2,                   \
                                 const float* k3) {                                             \
    grad_input(dy, y, x, dx, rows, c, k1, k2, k3);                                              \
  }                                                                                             \
  template <>                                                                                   \
  struct Kernels<T> {                                                                           \
    static constexpr auto stats = stats_##T;                                                    \
    static constexpr auto apply = apply_##T;                                                    \
    static constexpr auto grad_sums = grad_sums_##T;                                            \
    static constexpr auto grad_input = grad_input_##T;                                          \
  };
MZD_KERNELS(float)
MZD_KERNELS(uint16_t)
#undef MZD_KERNELS

template <typename T>
const T* data(const at::Tensor& t) {
  return t.defined() ? reinterpret_cast<const T*>(t.const_data_ptr()) : nullptr;
}
template <typename T>
T* mut_data(const at::Tensor& t) {
  return t.defined() ? reinterpret_cast<T*>(t.mutable_data_ptr()) : nullptr;
}

// x as the [rows, C] matrix of its channels-last memory.
int64_t rows_of(const at::Tensor& x) { return x.numel() / x.size(1); }
int64_t grain(int64_t c) { return std::max<int64_t>(1, 16384 / c); }

// Per-channel sums of two quantities over all rows: each thread adds its rows into its own
// pair of buffers, summed at the end (fp64).
template <typename F>
std::vector<double> channel_sums(int64_t rows, int64_t c, const F& add_rows) {
  const int64_t threads = at::get_num_threads();
  std::vector<double> partial(static_cast<size_t>(threads * 2 * c), 0.0);
  at::parallel_for(0, rows, grain(c), [&](int64_t begin, int64_t end) {
    double* mine = partial.data() + at::get_thread_num() * 2 * c;
    std::vector<float> scratch(static_cast<size_t>(2 * c));
    add_rows(begin, end, mine, mine + c, scratch.data());
  });
  std::vector<double> total(static_cast<size_t>(2 * c), 0.0);
  for (int64_t t = 0; t < threads; ++t)
    for (int64_t j = 0; j < 2 * c; ++j) total[j] += partial[t * 2 * c + j];
  return total;
}

// Batch statistics into mean / invstd and the running statistics (momentum, unbiased
// variance, as torch.nn.BatchNorm2d), then y = relu(x·scale + shift [+ res]).
template <typename T>
void forward_kernel(const at::Tensor& x, const at::Tensor& res, const at::Tensor& y,
                    const at::Tensor& weight, const at::Tensor& bias, const at::Tensor& mean,
                    const at::Tensor& invstd, const at::Tensor& running_mean,
                    const at::Tensor& running_var, double momentum, double eps) {
  const int64_t c = x.size(1), rows = rows_of(x);
  const T* xp = data<T>(x);
  const T* rp = data<T>(res);
  T* yp = mut_data<T>(y);
  const auto sums =
      channel_sums(rows, c, [&](int64_t b, int64_t e, double* s, double* q, float* acc) {
        Kernels<T>::stats(xp + b * c, e - b, c, s, q, acc);
      });
  const float *w = data<float>(weight), *bi = data<float>(bias);
  float *m = mut_data<float>(mean), *is = mut_data<float>(invstd);
  float *rm = mut_data<float>(running_mean), *rv = mut_data<float>(running_var);
  std::vector<float> scale(static_cast<size_t>(c)), shift(static_cast<size_t>(c));
  const double n = static_cast<double>(rows);
  for (int64_t j = 0; j < c; ++j) {
    const double mu = sums[j] / n;
    const double var = std::max(sums[c + j] / n - mu * mu, 0.0);
    const double inv = 1.0 / std::sqrt(var + eps);
    m[j] = static_cast<float>(mu);
    is[j] = static_cast<float>(inv);
    scale[j] = static_cast<float>(w[j] * inv);
    shift[j] = static_cast<float>(bi[j] - mu * w[j] * inv);
    rm[j] = static_cast<float>((1.0 - momentum) * rm[j] + momentum * mu);
    rv[j] = static_cast<float>((1.0 - momentum) * rv[j] + momentum * var * n / (n - 1.0));
  }
  at::parallel_for(0, rows, grain(c), [&](int64_t b, int64_t e) {
    Kernels<T>::apply(xp + b * c, rp != nullptr ? rp + b * c : nullptr, yp + b * c, e - b, c,
                      scale.data(), shift.data());
  });
}

// dx, dweight, dbias, and dres = g when `dres` is defined.
template <typename T>
void backward_kernel(const at::Tensor& dy, const at::Tensor& y, const at::Tensor& x,
                     const at::Tensor& weight, const at::Tensor& mean, const at::Tensor& invstd,
                     const at::Tensor& dx, const at::Tensor& dweight, const at::Tensor& dbias,
                     const at::Tensor& dres) {
  const int64_t c = x.size(1), rows = rows_of(x);
  const T *dyp = data<T>(dy), *yp = data<T>(y), *xp = data<T>(x);
  T* gp = mut_data<T>(dres);
  const float* m = data<float>(mean);
  const auto sums = channel_sums(rows, c, [&](int64_t b, int64_t e, double* sg, double* sgx,
                                                         float* acc) {
    const int64_t o = b * c;
    Kernels<T>::grad_sums(dyp + o, yp + o, xp + o, gp != nullptr ? gp + o : nullptr, e - b, c,
                          m, sg, sgx, acc);
  });
  const float *w = data<float>(weight), *is = data<float>(invstd);
  float *dw = mut_data<float>(dweight), *db = mut_data<float>(dbias);
  std::vector<float> k1(static_cast<size_t>(c)), k2(k1.size()), k3(k1.size());
  const double n = static_cast<double>(rows);
  for (int64_t j = 0; j < c; ++j) {
    const double sg = sums[j], sgx = sums[c + j], inv = is[j];
    const double a = w[j] * inv, b = -w[j] * inv * inv * inv * sgx / n;
    dw[j] = static_cast<float>(sgx * inv);
    db[j] = static_cast<float>(sg);
    k1[j] = static_cast<float>(a);
    k2[j] = static_cast<float>(b);
    k3[j] = static_cast<float>(-b * m[j] - a * sg / n);
  }
  T* dxp = mut_data<T>(dx);
  at::parallel_for(0, rows, grain(c), [&](int64_t b, int64_t e) {
    const int64_t o = b * c;
    Kernels<T>::grad_input(dyp + o, yp + o, xp + o, dxp + o, e - b, c, k1.data(), k2.data(),
                           k3.data());
  });
}

// The op with autograd; the residual is an input of its own only in BatchNormAddRelu
// (autograd::Function cannot take an undefined tensor).
template <typename Self>
struct BatchNormReluBase : torch::autograd::Function<Self> {
  static at::Tensor run(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                        const at::Tensor& bias, const at::Tensor& residual,
                        const at::Tensor& running_mean, const at::Tensor& running_var,
                        double momentum, double eps) {
    const auto cl = at::MemoryFormat::ChannelsLast;
    const at::Tensor x = input.contiguous(cl);
    const at::Tensor res = residual.defined() ? residual.contiguous(cl) : residual;
    const int64_t c = x.size(1);
    TORCH_CHECK(rows_of(x) > 1,
                "batch norm needs more than one value per channel, got input of size ",
                x.sizes());
    at::Tensor y = at::empty_like(x, x.options(), cl);
    at::Tensor mean = at::empty({c}, weight.options());
    at::Tensor invstd = at::empty({c}, weight.options());
    if (x.scalar_type() == at::kFloat)
      forward_kernel<float>(x, res, y, weight, bias, mean, invstd, running_mean, running_var,
                            momentum, eps);
    else
      forward_kernel<uint16_t>(x, res, y, weight, bias, mean, invstd, running_mean, running_var,
                               momentum, eps);
    ctx->save_for_backward({x, y, weight, mean, invstd});
    return y;
  }

  // dx, dweight, dbias, and the residual's gradient when `residual`.
  static variable_list gradients(AutogradContext* ctx, const variable_list& grads,
                                 bool residual) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &y = saved[1], &weight = saved[2];
    const at::Tensor dy = grads[0].contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor dres = residual ? at::empty_like(y) : at::Tensor();
    const at::Tensor dx = at::empty_like(x);
    const at::Tensor dweight = at::empty_like(weight), dbias = at::empty_like(weight);
    if (x.scalar_type() == at::kFloat)
      backward_kernel<float>(dy, y, x, weight, saved[3], saved[4], dx, dweight, dbias, dres);
    else
      backward_kernel<uint16_t>(dy, y, x, weight, saved[3], saved[4], dx, dweight, dbias, dres);
    return {dx, dweight, dbias, dres};
  }
};

struct BatchNormRelu : BatchNormReluBase<BatchNormRelu> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& running_mean,
                            const at::Tensor& running_var, double momentum, double eps) {
    return run(ctx, x, weight, bias, at::Tensor(), running_mean, running_var, momentum, eps);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto g = gradients(ctx, grads, false);
    return {g[0], g[1], g[2], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct BatchNormAddRelu : BatchNormReluBase<BatchNormAddRelu> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& residual,
                            const at::Tensor& running_mean, const at::Tensor& running_var,
                            double momentum, double eps) {
    return run(ctx, x, weight, bias, residual, running_mean, running_var, momentum, eps);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto g = gradients(ctx, grads, true);
    return {g[0], g[1], g[2], g[3], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

extern "C" {

// *out = relu(batch_norm(x) [+ residual]) with autograd, training mode. `residual` may be
// null. The caller has checked: x 4-D fp32 or bf16 on the CPU, residual of x's size and
// dtype; weight, bias and the running statistics fp32, contiguous, of x's channel count.
char* mzd_batch_norm_relu(const at::Tensor* x, const at::Tensor* residual,
                          const at::Tensor* weight, const at::Tensor* bias,
                          const at::Tensor* running_mean, const at::Tensor* running_var,
                          double momentum, double eps, at::Tensor** out) {
  MZD_PROTECT({
    *out = new at::Tensor(
        residual != nullptr
            ? BatchNormAddRelu::apply(*x, *weight, *bias, *residual, *running_mean,
                                      *running_var, momentum, eps)
            : BatchNormRelu::apply(*x, *weight, *bias, *running_mean, *running_var, momentum,
                                   eps));
  })
}

}  // extern "C"
