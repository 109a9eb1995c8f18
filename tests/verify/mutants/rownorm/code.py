import triton
import triton.language as tl


@triton.jit
def rownorm_kernel(x_ptr, out_ptr, n_cols, stride, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    y = diff / tl.sqrt(var + eps)
    tl.store(out_ptr + row * stride + cols, y, mask=mask)
