#include <cuda_runtime.h>
__global__ void fill(int *out) { out[threadIdx.x] = threadIdx.x; }
int kernel_launch(void) {
    int *d = nullptr;
    if (cudaMalloc(&d, 32 * sizeof(int)) != cudaSuccess) return 0;
    fill<<<1, 32>>>(d);
    cudaFree(d);
    return 0;
}
