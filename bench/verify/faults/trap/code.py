# A kernel that executes PTX `trap`: the device-side trap an assertion compiles to, fatal to
# the CUDA context (cudaErrorLaunchFailure or an illegal-instruction error).
import torch
import triton
import triton.language as tl


@triton.jit
def fault_trap_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    y = tl.inline_asm_elementwise("trap; mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32,
                                  is_pure=False, pack=1)
    tl.store(x_ptr + offs, y, mask=offs < n)
