# The toolkit lookup of NCCL's makefiles (makefiles/common.mk): CUDA_HOME defaults to
# /usr/local/cuda and nvcc, headers and libcudart are all taken from under it, never from
# PATH, so no cudaenv shim runs. The harness writes the machine's default root in place of
# /usr/local/cuda where that is not another toolkit (tests/buildmodes.py, default_root).
CUDA_HOME ?= /usr/local/cuda
CUDA_LIB ?= $(CUDA_HOME)/lib64
CUDA_INC ?= $(CUDA_HOME)/include
NVCC ?= $(CUDA_HOME)/bin/nvcc
CXX = c++
BUILDDIR ?= build-make

$(BUILDDIR)/libstandin.so: $(BUILDDIR)/kern.o $(BUILDDIR)/main.o
	$(CXX) -shared -o $@ $^ -L$(CUDA_LIB) -lcudart

$(BUILDDIR)/kern.o: kern.cu
	mkdir -p $(BUILDDIR)
	$(NVCC) -arch=sm_90 -I$(CUDA_INC) -Xcompiler -fPIC -c $< -o $@

$(BUILDDIR)/main.o: main.cpp
	mkdir -p $(BUILDDIR)
	$(CXX) -I$(CUDA_INC) -fPIC -c $< -o $@
