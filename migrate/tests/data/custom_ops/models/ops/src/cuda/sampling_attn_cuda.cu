#include <cuda_runtime.h>
template <typename T>
__global__ void sample_kernel(const T* value, T* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value[i];
}
template <typename T>
__global__ void sample_backward_kernel(const T* grad, T* grad_value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(grad_value + i, grad[i]);
}
