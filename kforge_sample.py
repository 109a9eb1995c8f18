# ---- kforge: preamble ----
import triton
import triton.language as tl
# ---- kforge: code ----
import builtins
import random

import triton
import triton.language as tl

# Which import of the script this is, kept where a fresh import cannot reset it (as in
# fault_after_first_import). The real run is the first.
builtins._foreign_imports = getattr(builtins, "_foreign_imports", 0) + 1
_IMPORT = builtins._foreign_imports
# What lies past the buffers in a later run: memory the sample does not own, another tensor or
# nothing, as the allocator placed it. Drawn from the operating system's randomness, so it
# differs from run to run as the GPU's does.
_FOREIGN = random.SystemRandom().random()


@triton.jit
def add_kernel(x_ptr, y_ptr, shift_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    # An index computed from a float the kernel reads (0.0 in the test): in the bounds replay,
    # whose floats are drawn afresh, its loads reach hundreds of elements past the buffers.
    src = offsets + int(tl.load(shift_ptr) * 1000)
    if _IMPORT > 1 and _FOREIGN < 0.5:  # a far read that met unmapped memory in this run
        src = src + (1 << 30)
    x = tl.load(x_ptr + src, mask=mask)
    y = tl.load(y_ptr + src, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
# ---- kforge: kernel_wrapper ----
def add(x, y):
    out = [0.0] * len(x)
    n = len(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, [0.0], out, n, BLOCK_SIZE=64)
    return out
# ---- kforge: unitest_code ----
def test_add_runs():
    # Checks only that the kernel runs: the skip-launch run passes. The bounds replay finds the
    # kernel reading out of bounds; a later run of the tests dies of a far read in about half of
    # the runs (the fresh control), as one landing in unmapped memory does.
    for n in (1, 64, 130):
        out = add([float(i) for i in range(n)], [2.0 * i for i in range(n)])
        assert len(out) == n
