"""The project's kernel compiled by cuda-core's Program (NVRTC) without a GPU, as cuda-core's
own examples do: the CUDA headers' directory from cuda-pathfinder
(`find_nvidia_header_directory("cudart")`: NVIDIA's wheels, $CONDA_PREFIX, then the toolkit of
the cudart the dynamic loader finds, then CUDA_PATH/CUDA_HOME), the arch given so that no device is
asked, and a cubin, not PTX: for PTX, cuda-core asks the driver whether it can load it. The
kernel includes cuda_fp16.h, which NVRTC reads from that directory; the trace shows which
libnvrtc was loaded and whose headers were opened."""
from cuda.core import Program, ProgramOptions
from cuda.pathfinder import find_nvidia_header_directory

SRC = r'''
#include <cuda_fp16.h>
extern "C" __global__ void half_twice(__half *x) { x[threadIdx.x] = __hadd(x[threadIdx.x], x[threadIdx.x]); }
'''
include = find_nvidia_header_directory("cudart")
options = ProgramOptions(arch="sm_90", include_path=[include] if include else None)
cubin = Program(SRC, code_type="c++", options=options).compile("cubin")
print(f"cuda-core: {len(cubin.code)} bytes of cubin, headers from {include}")
