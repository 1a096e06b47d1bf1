"""The project's CuPy kernel, compiled by NVRTC without a GPU. compile_using_nvrtc asks the
device for its arch unless it is given one, and its PTX and cubin paths ask the device again
(cupy's memoize keys on it), so this is CuPy's LTO path: arch 90, NVRTC writes LTO-IR."""
from cupy.cuda import compiler

SRC = 'extern "C" __global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }'
ir, _ = compiler.compile_using_nvrtc(SRC, options=("-dlto",), arch="90", method="lto")
print(f"cupy: {len(ir)} bytes of LTO-IR")
