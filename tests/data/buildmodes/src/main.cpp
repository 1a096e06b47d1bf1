#include <cuda_runtime.h>
int kernel_launch(void);
extern "C" int standin_devices(void) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n + kernel_launch() : -1;
}
