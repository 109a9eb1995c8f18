import triton
import triton.language as tl


@triton.jit
def scale_shift_relu_kernel(x_ptr, out_ptr, a, b, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = x * a + b
    tl.store(out_ptr + offsets, tl.where(y > 0, y, 0.0), mask=mask)
