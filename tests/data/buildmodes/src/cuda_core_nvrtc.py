"""The project's kernel compiled to PTX by cuda-core's Program (NVRTC), without a GPU: the arch
is given, so no device is asked. The kernel includes a toolkit header (cuda_fp16.h), which
NVRTC reads from the include directories cuda-core gives it; the trace shows which libnvrtc
was loaded and whose headers were opened."""
from cuda.core import Program, ProgramOptions

SRC = r'''
#include <cuda_fp16.h>
extern "C" __global__ void half_twice(__half *x) { x[threadIdx.x] = __hadd(x[threadIdx.x], x[threadIdx.x]); }
'''
ptx = Program(SRC, code_type="c++", options=ProgramOptions(arch="sm_90")).compile("ptx")
print(f"cuda-core: {len(ptx.code)} bytes of PTX")
