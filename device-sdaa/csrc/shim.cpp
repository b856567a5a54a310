// The few libtorch calls tch 0.24 does not expose, for device-sdaa (see src/shim.rs).
//
// tch has no PrivateUse1 device (the vendor plugin registers SDAA as PrivateUse1 named "sdaa"),
// and its autocast only knows CUDA. Tensors arrive as `at::Tensor*` (torch-sys's `tensor`).
// Every entry point catches C++ exceptions and returns them as a malloc'ed error string
// (freed with mzd_free_string): no exception ever crosses into Rust.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/DeviceType.h>
#include <torch/csrc/autograd/variable.h>

#include "protect.h"

#include <cstdlib>
#include <cstring>
#include <string>


extern "C" {

void mzd_free_string(char* s) { std::free(s); }

// Copies `src` to device (type, index); `*out` receives a new `at::Tensor*`.
char* mzd_to_device(const at::Tensor* src, int device_type, int index, int non_blocking,
                    at::Tensor** out) {
  MZD_PROTECT({
    c10::Device device(static_cast<c10::DeviceType>(device_type),
                       static_cast<c10::DeviceIndex>(index));
    *out = new at::Tensor(src->to(device, non_blocking != 0, /*copy=*/false));
  })
}

// Moves a variable (e.g. a VarStore parameter) to a device in place: its TensorImpl takes the
// moved data, so every handle to it (modules, optimizers) sees the new device and
// requires_grad/leaf-ness are kept. This is what `Variable::set_data` does, minus its check
// that refuses CPU -> PrivateUse1 (PrivateUse1 is not in its list of "dense" backends).
char* mzd_move_variable(at::Tensor* var, int device_type, int index) {
  MZD_PROTECT({
    c10::Device device(static_cast<c10::DeviceType>(device_type),
                       static_cast<c10::DeviceIndex>(index));
    at::Tensor moved = var->detach().to(device, /*non_blocking=*/false, /*copy=*/false);
    at::Tensor grad = var->grad();
    auto* meta = torch::autograd::impl::get_autograd_meta(*var);
    if (meta != nullptr) {
      std::lock_guard<std::mutex> lock(meta->mutex_);
      meta->grad_accumulator_.reset();  // it caches the old device
    }
    var->unsafeGetTensorImpl()->shallow_copy_from(moved.getIntrusivePtr());
    if (grad.defined()) var->mutable_grad() = grad.to(device);
  })
}

// The device type (c10::DeviceType as int) and index of a tensor.
char* mzd_tensor_device(const at::Tensor* t, int* device_type, int* index) {
  MZD_PROTECT({
    *device_type = static_cast<int>(t->device().type());
    *index = t->device().has_index() ? t->device().index() : -1;
  })
}

// The name registered for PrivateUse1 ("privateuseone" until a plugin renames it).
char* mzd_privateuse1_name(char** name) {
  MZD_PROTECT({ *name = mzd::dup_string(c10::get_privateuse1_backend(true)); })
}

// Whether a DeviceGuardImpl is registered for the type, and its device count.
char* mzd_guard_device_count(int device_type, int* registered, int* count) {
  MZD_PROTECT({
    auto type = static_cast<c10::DeviceType>(device_type);
    *registered = c10::impl::hasDeviceGuardImpl(type) ? 1 : 0;
    *count = *registered ? c10::impl::getDeviceGuardImpl(type)->deviceCount() : 0;
  })
}

char* mzd_guard_synchronize(int device_type, int index) {
  MZD_PROTECT({
    auto type = static_cast<c10::DeviceType>(device_type);
    if (c10::impl::hasDeviceGuardImpl(type)) {
      c10::impl::getDeviceGuardImpl(type)->synchronizeDevice(
          static_cast<c10::DeviceIndex>(index));
    }
  })
}

// Enables/disables autocast for a device type with a dtype (c10::ScalarType as int),
// returning the previous state so the caller can restore it.
char* mzd_autocast_enter(int device_type, int enabled, int dtype, int* prev_enabled,
                         int* prev_dtype) {
  MZD_PROTECT({
    auto type = static_cast<c10::DeviceType>(device_type);
    *prev_enabled = at::autocast::is_autocast_enabled(type) ? 1 : 0;
    *prev_dtype = static_cast<int>(at::autocast::get_autocast_dtype(type));
    at::autocast::set_autocast_enabled(type, enabled != 0);
    at::autocast::set_autocast_dtype(type, static_cast<c10::ScalarType>(dtype));
    at::autocast::increment_nesting();
  })
}

char* mzd_autocast_exit(int device_type, int prev_enabled, int prev_dtype) {
  MZD_PROTECT({
    auto type = static_cast<c10::DeviceType>(device_type);
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(type, prev_enabled != 0);
    at::autocast::set_autocast_dtype(type, static_cast<c10::ScalarType>(prev_dtype));
  })
}

char* mzd_autocast_is_enabled(int device_type, int* enabled) {
  MZD_PROTECT({
    *enabled = at::autocast::is_autocast_enabled(static_cast<c10::DeviceType>(device_type));
  })
}

}  // extern "C"
