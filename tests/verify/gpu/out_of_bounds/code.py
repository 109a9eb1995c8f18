import torch
import triton
import triton.language as tl


@triton.jit
def scatter_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    # Writes far past the end of out: an illegal address.
    tl.store(out_ptr + offs * 1000000000, x, mask=offs < n)
