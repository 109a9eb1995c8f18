import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, z_ptr, M, N, stride_xm, stride_zn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=mask)
    tl.store(z_ptr + rn[None, :] * stride_zn + rm[:, None], x, mask=mask)
