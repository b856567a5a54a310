// SDAA EMULATOR — libtorch_sdaa.so stand-in for tests and the demo. NOT SDAA hardware.
//
// Registers libtorch's PrivateUse1 device under the name "sdaa", as the vendor's torch_sdaa
// plugin does, backed by host memory from the emulator's libsdaart.so (so sdaaMemGetInfo sees
// every tensor): an allocator, a device guard, the factory/view/copy kernels, and a fallback
// that runs every other op's CPU kernel in place on the device memory (no copies; results equal
// the CPU's bit for bit; docs/torch_sdaa.md lists the exceptions). Recurrent layers, attention's
// backend choice and ops with a generic composite besides their CPU kernel are steered onto the
// CPU's path as well (see each). Low-precision GEMMs and convolutions compute as tensor cores
// do: fp32 kernels on the fp16/bf16 operands, outputs rounded back (see `TensorCoreScope`).
// Autocast on PrivateUse1 gets CUDA's cast policies; every other op falls through (see the
// end). Streams and events are exact for synchronous execution (events time real host time),
// pinned memory is remembered host memory, and the op inventory (inventory.cpp) counts what ran
// where when torch_sdaa turns it on.
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/Resize.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/library.h>

#include "inventory.h"
#include "perturb.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

extern "C" {
int sdaaGetDeviceCount(int* count);
int sdaaSetDevice(int device);
int sdaaGetDevice(int* device);
int sdaaMallocOnDevice(void** ptr, size_t size, int device);
int sdaaFree(void* ptr);
const char* sdaaGetErrorString(int error);
// Emulator-internal (sdaart.c): charge / credit a device for a host buffer adopted as its memory.
int sdaaEmuAdopt(size_t size, int device);
void sdaaEmuRelease(size_t size, int device);

// Read by device-sdaa for the "Torch-SDAA" row of `modelzoo env`.
__attribute__((visibility("default"))) const char* torch_sdaa_version() {
  return "2.1.1-emulator";
}
}  // extern "C"

// Why SDAA_EMU_PERTURB is not valid, or NULL: torch_sdaa checks it on import (the plugin also
// fails every sdaa allocation with it, for the Rust side).
extern "C" __attribute__((visibility("default"))) const char* torch_sdaa_emu_perturb_error() {
  const std::string& why = sdaa_emulator::perturb_error();
  return why.empty() ? nullptr : why.c_str();
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
    const std::string& bad_knob = sdaa_emulator::perturb_error();
    TORCH_CHECK(bad_knob.empty(), bad_knob);
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
  // Execution is synchronous (an op has finished when it returns), so a stream is only an
  // identity: id 0 is a device's default stream, the pool and new streams get fresh ids, and
  // each thread has a current stream per device, as on CUDA. Work on any stream is complete.
  c10::Stream getStream(c10::Device d) const override {
    const c10::DeviceIndex index = d.index() < 0 ? getDevice().index() : d.index();
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kSdaa, index), current_stream_id(index));
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool) const override {
    return getNewStream(d, 0);
  }
  c10::Stream getNewStream(c10::Device d, int) const override {
    static std::atomic<c10::StreamId> next{1};
    const c10::DeviceIndex index = d.index() < 0 ? getDevice().index() : d.index();
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kSdaa, index), next++);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    c10::Stream old = getStream(s.device());
    current_stream_id(old.device_index()) = s.id();
    return old;
  }
  static c10::StreamId& current_stream_id(c10::DeviceIndex index) {
    thread_local std::vector<c10::StreamId> current;  // per device; 0 is the default stream
    if (current.size() <= static_cast<size_t>(index)) current.resize(index + 1, 0);
    return current[index];
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    int n = 0;
    return sdaaGetDeviceCount(&n) == 0 ? static_cast<c10::DeviceIndex>(n) : 0;
  }
  // An event records when the host passed it, which is when its stream reached it (the work
  // before it has finished). It is complete once recorded, and waiting on it is free. Timing,
  // as on CUDA, only for events made with enable_timing (EventFlag::BACKEND_DEFAULT).
  struct Event {
    int64_t ns = 0;  // steady-clock time of the last record
    bool timing = false;
  };
  void record(void** event, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag flag)
      const override {
    if (*event == nullptr) *event = new Event{0, flag == c10::EventFlag::BACKEND_DEFAULT};
    static_cast<Event*>(*event)->ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<Event*>(event);
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start != nullptr && end != nullptr,
                "SDAA emulator: both events must be recorded before calculating elapsed time");
    const auto* a = static_cast<const Event*>(start);
    const auto* b = static_cast<const Event*>(end);
    TORCH_CHECK(a->timing && b->timing,
                "SDAA emulator: both events must be created with enable_timing=True to "
                "calculate elapsed time");
    return static_cast<double>(b->ns - a->ns) / 1e6;  // milliseconds, as on CUDA
  }
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
// Its storage is resizable through the CPU allocator, so an out= kernel may grow it: the grown
// buffer is then host memory that `host_fallback` copies back into the device tensor.
at::Tensor host_alias(const at::Tensor& t) {
  if (t.device().type() != kSdaa) return t;
  c10::Storage storage{c10::Storage::use_byte_size_t{}, t.storage().nbytes(),
                       at::DataPtr(t.storage().mutable_data_ptr().get(), at::kCPU),
                       c10::GetCPUAllocator(), /*resizable=*/true};
  at::Tensor alias = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides());
  alias.unsafeGetTensorImpl()->set_storage_offset(t.storage_offset());
  return alias;
}

// An sdaa tensor over the memory of `host`, a CPU tensor an op's kernel just produced, without
// copying it (the emulator's device memory is host memory). The device storage keeps the host
// storage alive and charges its bytes to the device, so memory info and the cap see it. Outputs
// sharing one host storage share one device storage (`adopted` remembers them per op).
using Adopted = std::vector<std::pair<const c10::StorageImpl*, c10::Storage>>;

at::Tensor adopt(const at::Tensor& host, const at::Device& device, Adopted& adopted) {
  if (!host.defined() || host.device().type() == kSdaa) return host;
  if (!host.is_cpu() || host.layout() != at::kStrided) return host.to(device);
  const c10::Storage& source = host.storage();
  const c10::StorageImpl* key = source.unsafeGetStorageImpl();
  c10::Storage storage;
  for (const auto& [impl, done] : adopted) {
    if (impl == key) storage = done;
  }
  if (!storage) {
    const size_t nbytes = source.nbytes();
    const int index = device.index() < 0 ? current_device() : device.index();
    int rc = sdaaEmuAdopt(nbytes, index);
    TORCH_CHECK(rc == 0, "SDAA emulator: cannot allocate ", nbytes, " bytes on sdaa:", index,
                ": ", sdaaGetErrorString(rc));
    at::DataPtr data = c10::InefficientStdFunctionContext::makeDataPtr(
        const_cast<void*>(source.data()),
        [keep = source, nbytes, index](void*) { sdaaEmuRelease(nbytes, index); },
        at::Device(kSdaa, static_cast<c10::DeviceIndex>(index)));
    storage = c10::Storage(c10::Storage::use_byte_size_t{}, nbytes, std::move(data), &allocator,
                           /*resizable=*/true);
    adopted.emplace_back(key, storage);
  }
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), kSdaaKeys,
                                                          host.dtype());
  t.unsafeGetTensorImpl()->set_sizes_and_strides(host.sizes(), host.strides());
  t.unsafeGetTensorImpl()->set_storage_offset(host.storage_offset());
  return t;
}

at::Tensor adopt(const at::Tensor& host, const at::Device& device) {
  Adopted adopted;
  return adopt(host, device, adopted);
}

// Tensor-core numerics for one GEMM or convolution: fp16/bf16 operands are widened to fp32
// (exactly), the fp32 CPU kernel accumulates in fp32, and floating outputs are rounded back to
// the operands' dtype — what CUDA's tensor cores compute, and far faster than the CPU's own
// fp16 kernels (which fall back to a naive im2col convolution).
struct TensorCoreScope {
  std::optional<at::ScalarType> low;  // the operands' low-precision dtype, if any

  TensorCoreScope() = default;
  explicit TensorCoreScope(std::initializer_list<const at::Tensor*> operands) {
    for (const at::Tensor* t : operands) see(*t);
  }
  void see(const at::Tensor& t) {
    if (t.defined() && is_low(t.scalar_type())) low = t.scalar_type();
  }
  static bool is_low(at::ScalarType s) { return s == at::kHalf || s == at::kBFloat16; }
  at::Tensor widen(const at::Tensor& t) const {
    return low && t.defined() && is_low(t.scalar_type()) ? t.to(at::kFloat) : t;
  }
  std::optional<at::Tensor> widen(const std::optional<at::Tensor>& t) const {
    if (t.has_value()) return widen(*t);
    return t;
  }
  at::Tensor round(const at::Tensor& t) const {
    return low && t.defined() && t.scalar_type() == at::kFloat ? t.to(*low) : t;
  }
};

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
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
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
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  host_alias(self).fill_(value);
  return self;
}

at::Tensor& zero(at::Tensor& self) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  host_alias(self).zero_();
  return self;
}

// Module.to / .cuda() keep each Parameter object and swap its data (`param.data = moved`) only
// when torch says the two tensors are of compatible types, which libtorch answers only for its
// own dense backends (CPU, CUDA, ...): otherwise every module gets a new Parameter, so weights
// tied between modules (word_language_model's --tied) come apart and an optimizer made before
// `.to("sdaa")` holds the old CPU parameters. Dense CPU and sdaa tensors are the same kind of
// tensor (host memory), so they are compatible, as CPU and CUDA tensors are.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto dense = [](const at::Tensor& t) {
    return t.layout() == at::kStrided && !t.is_quantized() && !t.is_nested() &&
           (t.is_cpu() || t.device().type() == kSdaa);
  };
  if (dense(self) && dense(from)) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

// Tensor.record_stream (DataParallel's scatter, side-stream copies): on CUDA it keeps the memory
// from reuse until the stream's queued work is done. Emulated work is done when the op returns
// and there is no caching allocator to reuse memory early: nothing to record.
void record_stream(at::Tensor&, at::Stream) {}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  return host_alias(self).item();
}

// Per-device generators: CPU generators tagged as sdaa (ops run on the host anyway).
struct EmulatorGenerator : public at::CPUGeneratorImpl {
  explicit EmulatorGenerator(c10::DeviceIndex index) {
    device_ = c10::Device(kSdaa, index);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }
};

// Pinned host memory: plain host memory (all emulated memory is), remembered so that
// is_pinned() tells it from pageable memory as on a real device (DataLoader(pin_memory=True)
// and pin_memory() rely on it).
struct PinnedAllocator final : at::Allocator {
  at::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes > 0 ? c10::alloc_cpu(nbytes) : nullptr;
    if (data != nullptr) {
      std::lock_guard<std::mutex> lock(mutex());
      blocks()[reinterpret_cast<uintptr_t>(data)] = nbytes;
    }
    return {data, data, &Delete, at::Device(at::kCPU)};
  }
  static void Delete(void* ptr) {
    if (ptr == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex());
      blocks().erase(reinterpret_cast<uintptr_t>(ptr));
    }
    c10::free_cpu(ptr);
  }
  at::DeleterFnPtr raw_deleter() const override { return &Delete; }
  void copy_data(void* dest, const void* src, std::size_t count) const final {
    default_copy_data(dest, src, count);
  }
  // Whether `ptr` points into a live pinned block.
  static bool contains(const void* ptr) {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mutex());
    auto it = blocks().upper_bound(p);
    if (it == blocks().begin()) return false;
    --it;
    return p < it->first + it->second;
  }
  // Pinned tensors can outlive static destructors (freed at exit): never destroyed.
  static std::map<uintptr_t, size_t>& blocks() {
    static auto* b = new std::map<uintptr_t, size_t>;  // start -> bytes
    return *b;
  }
  static std::mutex& mutex() {
    static auto* m = new std::mutex;
    return *m;
  }
};

PinnedAllocator pinned_allocator;

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
  at::Allocator* getPinnedMemoryAllocator() const override { return &pinned_allocator; }
  bool isPinnedPtr(const void* data) const override { return PinnedAllocator::contains(data); }
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
// only throws (so the boxed fallback cannot serve them): run the CPU convolution on host
// aliases of the operands, which picks the very kernel a CPU tensor would get — in fp32 for
// fp16/bf16 operands, as tensor cores compute.
at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias,
                                    at::IntArrayRef stride, at::IntArrayRef padding,
                                    at::IntArrayRef dilation, bool transposed,
                                    at::IntArrayRef output_padding, int64_t groups) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  std::optional<at::Tensor> host_bias;
  if (bias.has_value() && bias->defined()) host_bias = host_alias(*bias);
  TensorCoreScope tc({&input, &weight});
  at::Tensor out =
      at::convolution(tc.widen(host_alias(input)), tc.widen(host_alias(weight)),
                      tc.widen(host_bias), stride, padding, dilation, transposed, output_padding,
                      groups);
  return adopt(tc.round(out), input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
    at::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  std::optional<std::vector<int64_t>> bias_sizes;
  if (output_mask[2]) {
    bias_sizes = std::vector<int64_t>{transposed ? weight.size(1) * groups : weight.size(0)};
  }
  at::OptionalIntArrayRef bias_ref =
      bias_sizes ? at::OptionalIntArrayRef(*bias_sizes) : std::nullopt;
  TensorCoreScope tc({&grad_output, &input, &weight});
  auto [gi, gw, gb] = at::convolution_backward(
      tc.widen(host_alias(grad_output)), tc.widen(host_alias(input)),
      tc.widen(host_alias(weight)), bias_ref, stride, padding, dilation, transposed,
      output_padding, groups, output_mask);
  const auto& device = input.device();
  return {adopt(tc.round(gi), device), adopt(tc.round(gw), device), adopt(tc.round(gb), device)};
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
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  auto [out, save_mean, save_invstd] = at::native_batch_norm(
      host_alias(input), host_alias_opt(weight), host_alias_opt(bias),
      host_alias_opt(running_mean), host_alias_opt(running_var), training, momentum, eps);
  Adopted adopted;
  const auto& device = input.device();
  return {adopt(out, device, adopted), adopt(save_mean, device, adopted),
          adopt(save_invstd, device, adopted)};
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

// Recurrent layers. libtorch's LSTM and GRU cells (aten/src/ATen/native/RNN.cpp) take the fused
// `_thnn_fused_{lstm,gru}_cell` kernels for any input that `is_cuda() || is_privateuseone()`,
// which only CUDA implements; the CPU computes the cells from linear, sigmoid and tanh instead.
// So the layer-level ops run here on the CPU path: operands copied to the host through the
// autograd graph (`.cpu()`), the CPU op with its own autograd (dropout between layers, packed
// sequences, bidirectional, batch_first as the CPU does them), results copied back to the
// input's device. Forward and backward are the CPU's kernels in the CPU's order: bit-identical to
// a CPU run. Plain RNN layers (tanh, relu) have no fused cell, but the CPU projects the inputs
// of all time steps in one GEMM where other devices do one per step (`FullLayer`), so they take
// the CPU's path too; their single-step cells need nothing. Registered for PrivateUse1
// (inference, no autograd) and AutogradPrivateUse1, which takes precedence over the ops'
// CompositeImplicitAutograd kernels. As in `host_fallback`, the CPU ops of the forward stay out
// of RecordFunction (the layer op is recorded once, on sdaa); their backward runs as the
// autograd engine's CPU ops.
std::vector<at::Tensor> to_host(at::TensorList ts) {
  std::vector<at::Tensor> host;
  host.reserve(ts.size());
  for (const at::Tensor& t : ts) host.push_back(t.defined() ? t.cpu() : t);
  return host;
}

std::optional<at::Tensor> to_host(const std::optional<at::Tensor>& t) {
  if (t.has_value() && t->defined()) return t->cpu();
  return t;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_input(
    const at::Tensor& input, at::TensorList hx, at::TensorList params, bool has_biases,
    int64_t num_layers, double dropout, bool train, bool bidirectional, bool batch_first) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  auto [out, h, c] = at::lstm(input.cpu(), to_host(hx), to_host(params), has_biases, num_layers,
                              dropout, train, bidirectional, batch_first);
  const auto device = input.device();
  return {out.to(device), h.to(device), c.to(device)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_data(
    const at::Tensor& data, const at::Tensor& batch_sizes, at::TensorList hx,
    at::TensorList params, bool has_biases, int64_t num_layers, double dropout, bool train,
    bool bidirectional) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  auto [out, h, c] = at::lstm(data.cpu(), batch_sizes.cpu(), to_host(hx), to_host(params),
                              has_biases, num_layers, dropout, train, bidirectional);
  const auto device = data.device();
  return {out.to(device), h.to(device), c.to(device)};
}

std::tuple<at::Tensor, at::Tensor> gru_input(const at::Tensor& input, const at::Tensor& hx,
                                             at::TensorList params, bool has_biases,
                                             int64_t num_layers, double dropout, bool train,
                                             bool bidirectional, bool batch_first) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  auto [out, h] = at::gru(input.cpu(), hx.cpu(), to_host(params), has_biases, num_layers, dropout,
                          train, bidirectional, batch_first);
  const auto device = input.device();
  return {out.to(device), h.to(device)};
}

std::tuple<at::Tensor, at::Tensor> gru_data(const at::Tensor& data, const at::Tensor& batch_sizes,
                                            const at::Tensor& hx, at::TensorList params,
                                            bool has_biases, int64_t num_layers, double dropout,
                                            bool train, bool bidirectional) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  auto [out, h] = at::gru(data.cpu(), batch_sizes.cpu(), hx.cpu(), to_host(params), has_biases,
                          num_layers, dropout, train, bidirectional);
  const auto device = data.device();
  return {out.to(device), h.to(device)};
}

std::tuple<at::Tensor, at::Tensor> rnn_tanh_input(const at::Tensor& input, const at::Tensor& hx,
                                                  at::TensorList params, bool has_biases,
                                                  int64_t num_layers, double dropout, bool train,
                                                  bool bidirectional, bool batch_first) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  auto [out, h] = at::rnn_tanh(input.cpu(), hx.cpu(), to_host(params), has_biases, num_layers,
                               dropout, train, bidirectional, batch_first);
  const auto device = input.device();
  return {out.to(device), h.to(device)};
}

std::tuple<at::Tensor, at::Tensor> rnn_tanh_data(const at::Tensor& data,
                                                 const at::Tensor& batch_sizes,
                                                 const at::Tensor& hx, at::TensorList params,
                                                 bool has_biases, int64_t num_layers,
                                                 double dropout, bool train, bool bidirectional) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  auto [out, h] = at::rnn_tanh(data.cpu(), batch_sizes.cpu(), hx.cpu(), to_host(params),
                               has_biases, num_layers, dropout, train, bidirectional);
  const auto device = data.device();
  return {out.to(device), h.to(device)};
}

std::tuple<at::Tensor, at::Tensor> rnn_relu_input(const at::Tensor& input, const at::Tensor& hx,
                                                  at::TensorList params, bool has_biases,
                                                  int64_t num_layers, double dropout, bool train,
                                                  bool bidirectional, bool batch_first) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  auto [out, h] = at::rnn_relu(input.cpu(), hx.cpu(), to_host(params), has_biases, num_layers,
                               dropout, train, bidirectional, batch_first);
  const auto device = input.device();
  return {out.to(device), h.to(device)};
}

std::tuple<at::Tensor, at::Tensor> rnn_relu_data(const at::Tensor& data,
                                                 const at::Tensor& batch_sizes,
                                                 const at::Tensor& hx, at::TensorList params,
                                                 bool has_biases, int64_t num_layers,
                                                 double dropout, bool train, bool bidirectional) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  auto [out, h] = at::rnn_relu(data.cpu(), batch_sizes.cpu(), hx.cpu(), to_host(params),
                               has_biases, num_layers, dropout, train, bidirectional);
  const auto device = data.device();
  return {out.to(device), h.to(device)};
}

std::tuple<at::Tensor, at::Tensor> lstm_cell(const at::Tensor& input, at::TensorList hx,
                                             const at::Tensor& w_ih, const at::Tensor& w_hh,
                                             const std::optional<at::Tensor>& b_ih,
                                             const std::optional<at::Tensor>& b_hh) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  auto [h, c] = at::lstm_cell(input.cpu(), to_host(hx), w_ih.cpu(), w_hh.cpu(), to_host(b_ih),
                              to_host(b_hh));
  const auto device = input.device();
  return {h.to(device), c.to(device)};
}

at::Tensor gru_cell(const at::Tensor& input, const at::Tensor& hx, const at::Tensor& w_ih,
                    const at::Tensor& w_hh, const std::optional<at::Tensor>& b_ih,
                    const std::optional<at::Tensor>& b_hh) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  return at::gru_cell(input.cpu(), hx.cpu(), w_ih.cpu(), w_hh.cpu(), to_host(b_ih),
                      to_host(b_hh))
      .to(input.device());
}

// scaled_dot_product_attention asks the `_fused_sdp_choice` stub of the query's device which
// kernel to run and takes the math path on a device without one. The CPU's choice is usually
// the flash kernel (`_scaled_dot_product_flash_attention_for_cpu`): without this registration
// sdaa took the math path and drifted from the CPU (2.4e-7 in fp32). The stub asks the CPU's
// choice for host aliases of the same tensors, so sdaa runs the very kernel the CPU runs.
int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa) {
  at::DisableRecordFunctionGuard internals;  // see `host_fallback`
  return at::_fused_sdp_choice(host_alias(query), host_alias(key), host_alias(value),
                               host_alias_opt(attn_mask), dropout_p, is_causal, scale,
                               enable_gqa);
}

}  // namespace

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &fused_sdp_choice)
}  // namespace at::native

namespace {

// Ops taking a device (factories) have nothing to alias: they take libtorch's copying CPU
// fallback (operands to the host, the kernel, results back).
bool takes_device(const c10::FunctionSchema& schema) {
  for (const c10::Argument& a : schema.arguments()) {
    c10::TypePtr type = a.real_type();
    if (auto opt = type->castRaw<c10::OptionalType>()) type = opt->getElementType();
    if (type->kind() == c10::TypeKind::DeviceObjType) return true;
  }
  return false;
}

bool is_out_argument(const c10::Argument& a) {
  return a.kwarg_only() && a.alias_info() != nullptr && a.alias_info()->isWrite();
}

// GEMMs (functional and out= overloads; in-place ones are named `addmm_` and the like): with
// fp16/bf16 operands these compute as tensor cores do (see TensorCoreScope).
bool is_gemm(const c10::FunctionSchema& schema) {
  static const std::string_view gemms[] = {
      "aten::mm",     "aten::addmm", "aten::bmm", "aten::baddbmm",          "aten::addbmm",
      "aten::mv",     "aten::addmv", "aten::dot", "aten::_addmm_activation"};
  for (std::string_view g : gemms) {
    if (schema.name() == g) return true;
  }
  return false;
}

// One tensor operand of an op run by `host_fallback`.
struct Operand {
  at::Tensor alias;     // what the CPU kernel sees
  at::Tensor original;  // the caller's tensor
  bool out;             // an out= argument
};

// An out= kernel may resize or restride its output: give the sdaa tensor the alias's geometry,
// and its bytes when the kernel grew the storage into fresh host memory.
void sync_out(const Operand& o) {
  at::TensorImpl* impl = o.original.unsafeGetTensorImpl();
  const c10::Storage& host = o.alias.storage();
  const c10::Storage& device = o.original.storage();
  if (host.data() != device.data()) {
    if (host.nbytes() > device.nbytes()) {
      device.unsafeGetStorageImpl()->set_data_ptr_noswap(allocator.allocate(host.nbytes()));
      device.unsafeGetStorageImpl()->set_nbytes(host.nbytes());
    }
    std::memcpy(device.mutable_data(), host.data(), host.nbytes());
  }
  if (o.alias.sizes() != o.original.sizes() || o.alias.strides() != o.original.strides() ||
      o.alias.storage_offset() != o.original.storage_offset()) {
    impl->set_sizes_and_strides(o.alias.sizes(), o.alias.strides());
    impl->set_storage_offset(o.alias.storage_offset());
  }
}

// An sdaa generator (torch.Generator("sdaa")) is a CPU generator tagged sdaa, which CPU kernels
// refuse: while the op runs, its arguments hold CPU twins of those generators' states, copied
// back after, so the sdaa generator advances as if the kernel had drawn from it.
struct GeneratorTwins {
  std::vector<std::pair<at::Generator, at::Generator>> twins;  // (sdaa generator, CPU twin)

  GeneratorTwins(torch::jit::Stack* stack, size_t arguments) {
    for (size_t i = stack->size() - arguments; i < stack->size(); ++i) {
      c10::IValue& v = (*stack)[i];
      if (!v.isGenerator() || v.toGenerator().device().type() != kSdaa) continue;
      at::Generator twin = at::make_generator<at::CPUGeneratorImpl>();
      {
        std::lock_guard<std::mutex> lock(v.toGenerator().mutex());
        twin.set_state(v.toGenerator().get_state());
      }
      twins.emplace_back(v.toGenerator(), twin);
      v = twin;
    }
  }
  ~GeneratorTwins() {
    for (auto& [generator, twin] : twins) {
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(twin.get_state());
    }
  }
};

// Runs `kernel`; when it raises, the op inventory learns why (inventory.cpp lists the ops that
// failed on sdaa with it) and the error goes on to the caller unchanged.
template <typename Kernel>
void noting_failure(Kernel&& kernel) {
  try {
    kernel();
  } catch (const c10::Error& e) {
    if (sdaa_emulator::inventory_enabled()) sdaa_emulator::note_failure(e.what_without_backtrace());
    throw;
  } catch (const std::exception& e) {
    if (sdaa_emulator::inventory_enabled()) sdaa_emulator::note_failure(e.what());
    throw;
  }
}

// Every op without an sdaa kernel: its CPU kernel runs on host aliases of the sdaa operands, so
// results are written straight into device memory and nothing is copied in; fresh outputs are
// adopted as sdaa tensors (nothing copied out); outputs that alias an operand come back as
// that operand (in-place and out= ops) or as a view of its device storage.
//
// What the emulator runs inside an sdaa kernel stays out of RecordFunction (profilers, dump
// captures, SDAA_EMU_PERTURB): the op on sdaa is recorded once, as a device kernel is, not
// again as the CPU ops that emulate it.
void host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  at::DisableRecordFunctionGuard internals;
  const c10::FunctionSchema& schema = op.schema();
  GeneratorTwins generators(stack, schema.arguments().size());
  if (takes_device(schema)) {
    if (sdaa_emulator::inventory_enabled()) sdaa_emulator::note_emulator_fallback(schema.name());
    noting_failure([&] { at::native::cpu_fallback(op, stack); });
    return;
  }
  std::vector<Operand> operands;
  std::optional<at::Device> device;
  auto to_host = [&](const at::Tensor& t, bool out) -> at::Tensor {
    if (!t.defined()) return t;
    at::Tensor alias = host_alias(t);
    if (t.device().type() == kSdaa && !device) device = t.device();
    operands.push_back({alias, t, out});
    return alias;
  };
  const size_t begin = stack->size() - schema.arguments().size();
  for (size_t i = begin; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor()) {
      v = to_host(v.toTensor(), is_out_argument(schema.arguments()[i - begin]));
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> host;
      for (const at::Tensor& t : v.toTensorList()) host.push_back(to_host(t, false));
      v = std::move(host);
    } else if (v.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> host;
      for (const std::optional<at::Tensor>& t : v.toOptionalTensorList()) {
        host.push_back(t.has_value() ? std::optional<at::Tensor>(to_host(*t, false))
                                     : std::nullopt);
      }
      v = std::move(host);
    }
  }
  if (!device) {  // no sdaa operand at all: nothing to alias
    if (sdaa_emulator::inventory_enabled()) sdaa_emulator::note_emulator_fallback(schema.name());
    noting_failure([&] { at::native::cpu_fallback(op, stack); });
    return;
  }

  // Tensor-core GEMMs: fp32 operands, and an fp32 stand-in for `out` rounded into it after.
  TensorCoreScope tc;
  std::vector<std::pair<at::Tensor, at::Tensor>> wide_outs;  // (stand-in, the out alias)
  if (is_gemm(schema)) {
    for (const Operand& o : operands) {
      if (!o.out) tc.see(o.alias);
    }
    for (size_t i = begin; tc.low && i < stack->size(); ++i) {
      c10::IValue& v = (*stack)[i];
      if (!v.isTensor()) continue;
      if (is_out_argument(schema.arguments()[i - begin])) {
        at::Tensor wide = at::empty({0}, v.toTensor().options().dtype(at::kFloat));
        wide_outs.emplace_back(wide, v.toTensor());
        v = wide;
      } else {
        v = tc.widen(v.toTensor());
      }
    }
  }

  noting_failure([&] { op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack); });

  for (const auto& [wide, out] : wide_outs) {
    at::native::resize_output(out, wide.sizes());
    out.copy_(wide);  // rounds to the out dtype
  }
  for (const Operand& o : operands) {
    if (o.out) sync_out(o);
  }
  Adopted adopted;
  auto to_device = [&](at::Tensor out) -> at::Tensor {
    if (!out.defined()) return out;
    for (const auto& [wide, alias] : wide_outs) {
      if (out.is_same(wide)) out = alias;
    }
    for (const Operand& o : operands) {
      if (out.is_same(o.alias)) return o.original;
    }
    for (const Operand& o : operands) {
      if (o.original.device().type() == kSdaa &&
          out.storage().unsafeGetStorageImpl() == o.alias.storage().unsafeGetStorageImpl()) {
        at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(
            c10::Storage(o.original.storage()), kSdaaKeys, out.dtype());
        view.unsafeGetTensorImpl()->set_sizes_and_strides(out.sizes(), out.strides());
        view.unsafeGetTensorImpl()->set_storage_offset(out.storage_offset());
        return view;
      }
    }
    return adopt(tc.round(out), *device, adopted);
  };
  const size_t returns = schema.returns().size();
  for (size_t i = stack->size() - returns; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor()) {
      v = to_device(v.toTensor());
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> on_device;
      for (const at::Tensor& t : v.toTensorList()) on_device.push_back(to_device(t));
      v = std::move(on_device);
    }
  }
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
  m.impl("record_stream", &record_stream);
  m.impl("_has_compatible_shallow_copy_type", &has_compatible_shallow_copy_type);
  m.impl("convolution_overrideable", &convolution_overrideable);
  m.impl("convolution_backward_overrideable", &convolution_backward_overrideable);
  m.impl("native_batch_norm", &host_native_batch_norm);
  m.impl("native_batch_norm.out", &host_native_batch_norm_out);
  m.impl("lstm.input", &lstm_input);
  m.impl("lstm.data", &lstm_data);
  m.impl("gru.input", &gru_input);
  m.impl("gru.data", &gru_data);
  m.impl("lstm_cell", &lstm_cell);
  m.impl("gru_cell", &gru_cell);
  m.impl("rnn_tanh.input", &rnn_tanh_input);
  m.impl("rnn_tanh.data", &rnn_tanh_data);
  m.impl("rnn_relu.input", &rnn_relu_input);
  m.impl("rnn_relu.data", &rnn_relu_data);
}

// The recurrent layers' autograd on sdaa is the CPU's (see `lstm_input`).
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("lstm.input", &lstm_input);
  m.impl("lstm.data", &lstm_data);
  m.impl("gru.input", &gru_input);
  m.impl("gru.data", &gru_data);
  m.impl("lstm_cell", &lstm_cell);
  m.impl("gru_cell", &gru_cell);
  m.impl("rnn_tanh.input", &rnn_tanh_input);
  m.impl("rnn_tanh.data", &rnn_tanh_data);
  m.impl("rnn_relu.input", &rnn_relu_input);
  m.impl("rnn_relu.data", &rnn_relu_data);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&host_fallback>());
}

// An op with both a CPU kernel and a CompositeExplicitAutograd kernel would take the composite on
// sdaa (it outranks a backend fallback): another algorithm than the CPU's, e.g.
// `math_native_layer_norm` for `native_layer_norm` (2.4e-7 off the CPU's layer_norm in fp32),
// `math_group_norm`, `math_addr`. Those ops are given the fallback explicitly, so that they run
// the CPU's kernel as every other op does. (Structured ops' functional variants are
// CompositeExplicitAutogradNonFunctional: they call the op's out= variant, which runs the CPU's
// kernel already.) Found at load, after libtorch registered its ops, so the list follows torch.
namespace {
struct CpuKernelsOverComposites {
  CpuKernelsOverComposites() {
    static auto* library = new torch::Library(torch::Library::IMPL, "aten",
                                              c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("aten::", 0) != 0) continue;
      const std::optional<c10::OperatorHandle> op = dispatcher.findOp(name);
      if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::CPU) ||
          !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
          op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) {
        continue;
      }
      std::string qualified = name.name;
      if (!name.overload_name.empty()) qualified += "." + name.overload_name;
      library->impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&host_fallback>());
    }
  }
} cpu_kernels_over_composites;
}  // namespace

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
