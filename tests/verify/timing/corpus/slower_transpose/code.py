import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, out_ptr, M, N, BLOCK: tl.constexpr):
    # Naive: reads along a row, writes down a column (every store a different cache line).
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < M * N
    row = offsets // N
    col = offsets % N
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + col * M + row, x, mask=mask)
