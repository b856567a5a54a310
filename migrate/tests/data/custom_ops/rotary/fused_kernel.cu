__global__ void fused_kernel(float* x, const float* b, int n) {}
