// {{name}}: the sdaa kernels (the PrivateUse1 dispatch key: torch_sdaa's device, and the kit's
// SDAA emulator's). Each starts as a stub that stops with a clear error: an op is never passed
// on to its reference in silence. Write the kernel here — with the SDAA SDK's device code, or
// as a composition of ATen ops, which run wherever the device's ATen kernels run:
//
//   return x.add(y, alpha);
//
// — then check it against the reference: modelzoo op check (see the package's README).

#include "kernels.h"

namespace {{name}} {

at::Tensor scale_add_sdaa(const at::Tensor& x, const at::Tensor& y, double alpha) {
  (void)x;
  (void)y;
  (void)alpha;
  TORCH_CHECK(false,
              "{{name}}: the sdaa kernel is not implemented yet: write it in "
              "{{name}}/csrc/sdaa.cpp (scale_add_sdaa)");
}

}  // namespace {{name}}
