# As a CUDA 13.0 wheel of torch 2.13.0 has it (cudaenv's probe reads this file's text).
__version__ = '2.13.0+cu130'
debug = False
cuda: str | None = '13.0'
hip = None
