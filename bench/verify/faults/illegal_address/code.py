# A kernel that stores far outside its buffer: the GPU raises an illegal-address fault
# (cudaErrorIllegalAddress), fatal to the CUDA context that launched it.
import torch
import triton
import triton.language as tl


@triton.jit
def fault_store_far_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    far = offs.to(tl.int64) + 17592186044416  # 2**44 elements past the buffer
    tl.store(x_ptr + far, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)
