"""The project's numba-cuda kernel, compiled to PTX for sm_90 without a GPU: NVVM (libnvvm)
with libdevice for the math, libnvrtc loaded through cuda-pathfinder on the way."""
import math

from numba import cuda


def scale(x, y):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = math.sin(x[i]) * math.exp(x[i])


ptx, _ = cuda.compile_ptx(scale, "(float32[:], float32[:])", cc=(9, 0))
print(f"numba-cuda: {len(ptx)} bytes of PTX")
