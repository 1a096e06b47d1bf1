"""The project's use of cuda-pathfinder: load libnvrtc and libnvvm as cuda-python, numba-cuda
and cupy do (load_nvidia_dynamic_lib: wheels, conda, the dynamic loader, then CUDA_PATH)."""
from cuda.pathfinder import load_nvidia_dynamic_lib

for name in ("nvrtc", "nvvm"):
    lib = load_nvidia_dynamic_lib(name)
    print(f"{name}: {lib.abs_path} ({lib.found_via})")
