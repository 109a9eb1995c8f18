"""Kernels of the CPU stand-in for Triton, for kernel_test.py: the operators' sources and the
equivalence replay's launches."""
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(x > 0, x, 0.0), mask=mask)


@triton.jit
def log_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=1.0)
    tl.store(out_ptr + offsets, tl.log(x), mask=mask)


@triton.jit
def log_kernel_guarded(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Differs from log_kernel only where the log is undefined (x <= 0).
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=1.0)
    tl.store(out_ptr + offsets, tl.where(x > 0, tl.log(x), 0.0), mask=mask)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK_N: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


@triton.jit
def row_block_sum_kernel(X, Out, n_rows, n_cols, stride_row, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr):
    # pointers named as many real kernels name them (no _ptr): X and Out
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(X + rows[:, None] * stride_row + cols[None, :], mask=mask, other=0.0)
    tl.store(Out + rows, tl.sum(x, 1), mask=rows < n_rows)


@triton.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    idx = tl.load(idx_ptr + offsets, mask=mask, other=0)
    tl.store(out_ptr + offsets, tl.load(x_ptr + idx, mask=mask) * 2.0, mask=mask)


@triton.jit
def transpose_kernel(x_ptr, z_ptr, M, N, stride_xm, stride_zn, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=mask)
    tl.store(z_ptr + rn[None, :] * stride_zn + rm[:, None], x, mask=mask)


@triton.jit
def softmax_like(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-1.0)
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0) * 0.5, mask=cols < n_cols)


@triton.jit
def scale_kernel(x_ptr, out_ptr, scale, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * scale, mask=mask)
