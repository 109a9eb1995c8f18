# A kernel that fails tl.device_assert (compiled in with debug=True): a device-side assertion,
# fatal to the CUDA context.
import torch
import triton
import triton.language as tl


@triton.jit(debug=True)
def fault_assert_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_assert(x < 0, "the sample's own assertion")
    tl.store(x_ptr + offs, x + 1, mask=offs < n)
