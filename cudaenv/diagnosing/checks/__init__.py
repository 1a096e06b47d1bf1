"""The doctor's checks, one module per subject; cudaenv.diagnosing.diagnostics lists them in
report order (CHECKS) and runs them.

context     Check, Report and the read-only Context every check reads, with the shared fixes
facts       what several checks read off the disk (headers, stubs, the store root)
selection   selected-toolkit, cuda-home, env-agree, <consumer>-finds
roots       store-root and default-root: toolkit roots a build derives without asking cudaenv
torch       torch-toolkit, torch-arch
toolkit     gpu-target, toolkit-headers, libcuda-stub
flashinfer  flashinfer-sm12
triton      triton-ptxas, triton-ptxas-env
answers     data-<consumer>, sglang-*, flashinfer-arch (the consumers' own answers)
hostcc      host-compiler
companions  cudnn-match, nccl-match
venv        venv-binding
libraries   lib-<name>, cupy-nvcc, meson-cuda
cupy        cupy-cuda, driver-cupy
numba       numba-cuda, numba-cuda-ptx
cudacore    cuda-core
ldpath      ld-shadow, ld-library-path
driver      driver-gpu, driver-torch, driver
caches      jit-caches

Each module keeps its user-facing texts in one TEXT table of templates beside its checks;
a check decides, then fills a template with `ctx.said(id, status, TEXT[key], fix, **values)`.
"""
