import triton
import triton.language as tl


@triton.jit
def lse_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=-float("inf"))
    tl.store(out_ptr, tl.log(tl.sum(tl.exp(x), axis=0)))
