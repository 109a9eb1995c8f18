import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(acc_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    v = tl.load(acc_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(v > 0, v, 0.0), mask=mask)
