import builtins

import triton
import triton.language as tl

# Which import of the script this is, kept where a fresh import cannot reset it. It stands for
# GPU memory the kernel reads without having written it (an index tensor from torch.empty):
# zeros in the real run's fresh process, the harness's poison in the runs after it.
builtins._repeat_imports = getattr(builtins, "_repeat_imports", 0) + 1
_IMPORT = builtins._repeat_imports


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    if _IMPORT > 1:  # an index read from memory the real run found zeroed: far out of bounds
        offsets = offsets + (1 << 30)
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
