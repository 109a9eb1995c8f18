# A kernel that spins on a flag nothing sets: it runs until the pool kills the sample at its
# deadline, its work still on the GPU.
import torch
import triton
import triton.language as tl


@triton.jit
def fault_hang_kernel(flag_ptr, x_ptr):
    v = tl.load(flag_ptr, volatile=True)
    while v == 0:
        v = tl.load(flag_ptr, volatile=True)
    tl.store(x_ptr, v)
