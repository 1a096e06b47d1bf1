"""The project's Triton kernel, compiled for sm_90 without a GPU: Triton writes PTX and runs
the ptxas it picks (TRITON_PTXAS_BLACKWELL_PATH from sm_90 on in 3.9, else its own bundled
one) to make the cubin."""
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)


signature = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}
kernel = triton.compile(ASTSource(fn=add, signature=signature, constexprs={"BLOCK": 128}),
                        target=GPUTarget("cuda", 90, 32))
print(f"triton: {len(kernel.asm['cubin'])} bytes of cubin")
