# torch._inductor looks the uid up in the passwd database when it is imported (getpass); a sample
# on a uid with no name failed here with "KeyError: 'getpwuid(): uid not found'".
import getpass
import os
import pwd

import torch
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, triton_helpers.maximum(x, tl.zeros_like(x)), mask=mask)
