// SDAA EMULATOR — libtorch_sdaa.so stand-in for tests and the demo. NOT SDAA hardware.
//
// Registers libtorch's PrivateUse1 device under the name "sdaa", as the vendor's torch_sdaa
// plugin does, backed by host memory from the emulator's libsdaart.so (so sdaaMemGetInfo sees
// every tensor): an allocator, a device guard, the factory/view/copy kernels, and the CPU
// fallback for every other op (so results equal the CPU's bit for bit). Autocast on
// PrivateUse1 gets CUDA's cast policies; every other op falls through (see the end).
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/autocast_mode.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <cstring>
#include <mutex>
#include <vector>

extern "C" {
int sdaaGetDeviceCount(int* count);
int sdaaSetDevice(int device);
int sdaaGetDevice(int* device);
int sdaaMallocOnDevice(void** ptr, size_t size, int device);
int sdaaFree(void* ptr);
const char* sdaaGetErrorString(int error);

// Read by device-sdaa for the "Torch-SDAA" row of `modelzoo env`.
__attribute__((visibility("default"))) const char* torch_sdaa_version() {
  return "2.1.1-emulator";
}
}

namespace {

constexpr c10::DeviceType kSdaa = c10::DeviceType::PrivateUse1;

int current_device() {
  int d = 0;
  sdaaGetDevice(&d);
  return d;
}

struct EmulatorAllocator final : at::Allocator {
  at::DataPtr allocate(size_t nbytes) override {
    int device = current_device();
    void* data = nullptr;
    if (nbytes > 0) {
      int rc = sdaaMallocOnDevice(&data, nbytes, device);
      TORCH_CHECK(rc == 0, "SDAA emulator: cannot allocate ", nbytes, " bytes on sdaa:", device,
                  ": ", sdaaGetErrorString(rc));
    }
    return {data, data, &Delete, at::Device(kSdaa, static_cast<c10::DeviceIndex>(device))};
  }
  static void Delete(void* ptr) { sdaaFree(ptr); }
  at::DeleterFnPtr raw_deleter() const override { return &Delete; }
  void copy_data(void* dest, const void* src, std::size_t count) const final {
    default_copy_data(dest, src, count);
  }
};

EmulatorAllocator allocator;

struct EmulatorGuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kSdaa; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (old.index() != d.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override {
    return c10::Device(kSdaa, static_cast<c10::DeviceIndex>(current_device()));
  }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kSdaa, "SDAA emulator: not an sdaa device: ", d);
    int rc = sdaaSetDevice(d.index() < 0 ? 0 : d.index());
    TORCH_CHECK(rc == 0, "SDAA emulator: cannot select sdaa:", static_cast<int>(d.index()), ": ",
                sdaaGetErrorString(rc));
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    sdaaSetDevice(d.index() < 0 ? 0 : d.index());
  }
  c10::Stream getStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    int n = 0;
    return sdaaGetDeviceCount(&n) == 0 ? static_cast<c10::DeviceIndex>(n) : 0;
  }
  // Host memory, one in-order "stream": events are trivially complete.
  void record(void**, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag)
      const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
  void synchronizeEvent(void*) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, EmulatorGuardImpl);

struct RegisterName {
  RegisterName() { c10::register_privateuse1_backend("sdaa"); }
} register_name;

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &allocator);

constexpr c10::DispatchKeySet kSdaaKeys(c10::DispatchKey::PrivateUse1);

// A CPU tensor aliasing an sdaa tensor's memory (the emulator's device memory is host memory).
at::Tensor host_alias(const at::Tensor& t) {
  if (t.device().type() != kSdaa) return t;
  at::DataPtr data = c10::InefficientStdFunctionContext::makeDataPtr(
      t.storage().mutable_data_ptr().get(), [](void*) {}, at::kCPU);
  c10::Storage storage{c10::Storage::use_byte_size_t{}, t.storage().nbytes(), std::move(data),
                       /*allocator=*/nullptr, /*resizable=*/false};
  at::Tensor alias = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides());
  alias.unsafeGetTensorImpl()->set_storage_offset(t.storage_offset());
  return alias;
}

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout>, std::optional<at::Device> device,
                               std::optional<bool>, std::optional<at::MemoryFormat> fmt) {
  c10::OptionalDeviceGuard guard(device);
  return at::detail::empty_generic(size, &allocator, kSdaaKeys, c10::dtype_or_default(dtype),
                                   fmt);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                         std::optional<at::Device> device, std::optional<bool>) {
  c10::OptionalDeviceGuard guard(device);
  return at::detail::empty_strided_generic(size, stride, &allocator, kSdaaKeys,
                                           c10::dtype_or_default(dtype));
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  TORCH_CHECK(self.device().type() == kSdaa || self.is_cpu(),
              "SDAA emulator copies only between cpu and sdaa, not from ", self.device());
  TORCH_CHECK(dst.device().type() == kSdaa || dst.is_cpu(),
              "SDAA emulator copies only between cpu and sdaa, not to ", dst.device());
  at::Tensor d = host_alias(dst);
  d.copy_(host_alias(self));
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_(dst, self.sizes());  // dispatches to our resize_
  return copy_from(self, dst, false);
}

const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size,
                          std::optional<at::MemoryFormat> fmt) {
  at::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  const auto bytes = at::detail::computeStorageNbytesContiguous(size, impl->dtype().itemsize(),
                                                                impl->storage_offset());
  at::native::maybe_resize_storage_cpu(impl, bytes);
  if (fmt.has_value()) {
    TORCH_CHECK(*fmt != at::MemoryFormat::Preserve, "Unsupported memory format ", *fmt);
    impl->empty_tensor_restride(*fmt);
  }
  return self;
}

at::Tensor& set_storage(at::Tensor& result, c10::Storage src) {
  int64_t new_size = static_cast<int64_t>(src.nbytes() / result.dtype().itemsize());
  result.unsafeGetTensorImpl()->set_storage_keep_dtype(std::move(src));
  result.unsafeGetTensorImpl()->set_storage_offset(0);
  at::native::resize_impl_cpu_(result.unsafeGetTensorImpl(), new_size, std::nullopt,
                               /*resize_storage=*/false);
  return result;
}

at::Tensor& set_storage_offset(at::Tensor& result, c10::Storage storage, int64_t offset,
                               at::IntArrayRef size, at::IntArrayRef stride) {
  if (!result.storage().is_alias_of(storage)) {
    result.unsafeGetTensorImpl()->set_storage_keep_dtype(std::move(storage));
  }
  result.unsafeGetTensorImpl()->set_storage_offset(offset);
  at::OptionalIntArrayRef stride_opt =
      stride.data() != nullptr ? at::OptionalIntArrayRef(stride) : std::nullopt;
  at::native::resize_impl_cpu_(result.unsafeGetTensorImpl(), size, stride_opt,
                               /*resize_storage=*/true);
  return result;
}

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  host_alias(self).fill_(value);
  return self;
}

at::Tensor& zero(at::Tensor& self) {
  host_alias(self).zero_();
  return self;
}

at::Scalar local_scalar_dense(const at::Tensor& self) { return host_alias(self).item(); }

// Per-device generators: CPU generators tagged as sdaa (ops run on the host anyway).
struct EmulatorGenerator : public at::CPUGeneratorImpl {
  explicit EmulatorGenerator(c10::DeviceIndex index) {
    device_ = c10::Device(kSdaa, index);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }
};

// What libtorch asks of an accelerator backend (at::manual_seed, pinned memory, resize).
struct EmulatorHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return deviceCount() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override {
    int n = 0;
    return sdaaGetDeviceCount(&n) == 0 ? static_cast<c10::DeviceIndex>(n) : 0;
  }
  void setCurrentDevice(c10::DeviceIndex d) const override { sdaaSetDevice(d); }
  c10::DeviceIndex getCurrentDevice() const override {
    return static_cast<c10::DeviceIndex>(current_device());
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    auto old = getCurrentDevice();
    sdaaSetDevice(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override {
    return exchangeDevice(d);
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    static std::mutex mutex;
    static std::vector<at::Generator> generators;
    std::lock_guard<std::mutex> lock(mutex);
    if (index < 0) index = static_cast<c10::DeviceIndex>(current_device());
    TORCH_CHECK(index < deviceCount(), "SDAA emulator: no device sdaa:", static_cast<int>(index));
    while (generators.size() <= static_cast<size_t>(index)) {
      generators.push_back(at::make_generator<EmulatorGenerator>(
          static_cast<c10::DeviceIndex>(generators.size())));
    }
    return generators[index];
  }
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    return at::make_generator<EmulatorGenerator>(
        index < 0 ? static_cast<c10::DeviceIndex>(current_device()) : index);
  }
  at::Device getDeviceFromPtr(void*) const override {
    return at::Device(kSdaa, static_cast<c10::DeviceIndex>(current_device()));
  }
  at::Allocator* getPinnedMemoryAllocator() const override { return c10::GetCPUAllocator(); }
  void init() const override {}
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    at::DataPtr fresh = allocator.allocate(newsize);
    size_t keep = std::min(newsize, storage.nbytes());
    if (keep > 0) std::memcpy(fresh.get(), storage.data(), keep);
    storage.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(fresh));
    storage.unsafeGetStorageImpl()->set_nbytes(newsize);
  }
};

struct RegisterHooks {
  RegisterHooks() { at::RegisterPrivateUse1HooksInterface(new EmulatorHooks()); }
} register_hooks;

// Convolutions reach backends other than CPU/CUDA as *_overrideable ops, whose default kernel
// only throws (so the boxed CPU fallback cannot serve them): run the CPU convolution on host
// aliases of the operands, which picks the very kernel a CPU tensor would get.
at::Tensor to_sdaa(const at::Tensor& host, const at::Device& device) {
  return host.defined() ? host.to(device) : host;
}

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias,
                                    at::IntArrayRef stride, at::IntArrayRef padding,
                                    at::IntArrayRef dilation, bool transposed,
                                    at::IntArrayRef output_padding, int64_t groups) {
  std::optional<at::Tensor> host_bias;
  if (bias.has_value() && bias->defined()) host_bias = host_alias(*bias);
  at::Tensor out = at::convolution(host_alias(input), host_alias(weight), host_bias, stride,
                                   padding, dilation, transposed, output_padding, groups);
  return to_sdaa(out, input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
    at::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  std::optional<std::vector<int64_t>> bias_sizes;
  if (output_mask[2]) {
    bias_sizes = std::vector<int64_t>{transposed ? weight.size(1) * groups : weight.size(0)};
  }
  at::OptionalIntArrayRef bias_ref =
      bias_sizes ? at::OptionalIntArrayRef(*bias_sizes) : std::nullopt;
  auto [gi, gw, gb] = at::convolution_backward(
      host_alias(grad_output), host_alias(input), host_alias(weight), bias_ref, stride, padding,
      dilation, transposed, output_padding, groups, output_mask);
  const auto& device = input.device();
  return {to_sdaa(gi, device), to_sdaa(gw, device), to_sdaa(gb, device)};
}

// native_batch_norm updates running_mean/running_var in place, but its schema declares no
// mutation (`Tensor? running_mean`), so the boxed CPU fallback would update CPU copies and
// drop them: eval would then normalise with the initial statistics. Run the CPU kernel on host
// aliases of the sdaa tensors instead, so the in-place updates land in the sdaa memory.
std::optional<at::Tensor> host_alias_opt(const std::optional<at::Tensor>& t) {
  if (t.has_value() && t->defined()) return host_alias(*t);
  return std::nullopt;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> host_native_batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, bool training, double momentum, double eps) {
  auto [out, save_mean, save_invstd] = at::native_batch_norm(
      host_alias(input), host_alias_opt(weight), host_alias_opt(bias),
      host_alias_opt(running_mean), host_alias_opt(running_var), training, momentum, eps);
  const auto& device = input.device();
  return {to_sdaa(out, device), to_sdaa(save_mean, device), to_sdaa(save_invstd, device)};
}

// The .out variant hides the same mutation: compute through the kernel above, then fill the
// outputs (resized like any .out op).
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> host_native_batch_norm_out(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, bool training, double momentum, double eps,
    at::Tensor& out, at::Tensor& save_mean, at::Tensor& save_invstd) {
  auto [o, m, s] = host_native_batch_norm(input, weight, bias, running_mean, running_var,
                                          training, momentum, eps);
  at::native::resize_output(out, o.sizes());
  at::native::resize_output(save_mean, m.sizes());
  at::native::resize_output(save_invstd, s.sizes());
  out.copy_(o);
  save_mean.copy_(m);
  save_invstd.copy_(s);
  return {out, save_mean, save_invstd};
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  at::native::cpu_fallback(op, stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", &empty_memory_format);
  m.impl("empty_strided", &empty_strided);
  m.impl("_copy_from", &copy_from);
  m.impl("_copy_from_and_resize", &copy_from_and_resize);
  m.impl("resize_", &resize_);
  m.impl("set_.source_Storage", &set_storage);
  m.impl("set_.source_Storage_storage_offset", &set_storage_offset);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("view", at::native::view);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("fill_.Scalar", &fill_scalar);
  m.impl("zero_", &zero);
  m.impl("_local_scalar_dense", &local_scalar_dense);
  m.impl("convolution_overrideable", &convolution_overrideable);
  m.impl("convolution_backward_overrideable", &convolution_backward_overrideable);
  m.impl("native_batch_norm", &host_native_batch_norm);
  m.impl("native_batch_norm.out", &host_native_batch_norm_out);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

// Autocast on sdaa mirrors libtorch 2.11's registration for CUDA (aten/src/ATen/autocast_mode.cpp,
// `TORCH_LIBRARY_IMPL(aten, Autocast, m)`): the same lower_precision_fp / fp32 /
// fp32_set_opt_dtype / fp32_append_dtype / promote lists and the ban on binary_cross_entropy.
// Only cudnn_convolution{,_transpose} are left out: those are CUDA-only ops.
//
// Every op in none of those lists (batch_norm, relu, max_pool2d, add, ...) must fall through
// to the next key, as on CUDA: without the fallthrough the dispatcher finds no kernel for
// AutocastPrivateUse1 and fails ("Could not run 'aten::batch_norm' ... 'Autocastsdaa'").
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

namespace {
// libtorch does not export at::autocast::binary_cross_entropy_banned; same check, same text.
at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&,
                                       const std::optional<at::Tensor>&, int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using "
              "torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}
}  // namespace

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define MZ_LOW(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(MZ_LOW)
#define MZ_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(MZ_FP32)
#define MZ_FP32_OPT(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(MZ_FP32_OPT)
  {
    // The list spells its signatures with unqualified ATen names (Tensor, Scalar, ScalarType).
    using at::DimnameList;
    using at::IntArrayRef;
    using at::Scalar;
    using at::ScalarType;
    using at::Tensor;
    AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  }
#define MZ_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(MZ_PROMOTE)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN((&binary_cross_entropy_banned)));
}
