import triton
import triton.language as tl


@triton.jit
def rms_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    ms = tl.sum(x * x, axis=0) / n
    tl.store(out_ptr + offsets, x / tl.sqrt(ms + 1e-5), mask=mask)
