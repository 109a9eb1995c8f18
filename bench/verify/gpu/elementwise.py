import torch
import triton
import triton.language as tl


@triton.jit
def axpy_kernel_@ID@(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * @SCALE@ + y, mask=mask)
# ---- kernel_wrapper ----
def axpy(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    axpy_kernel_@ID@[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
# ---- unitest_code ----
def test_axpy():
    for n in (1, 1000, 65537):
        x = torch.rand(n, device="cuda")
        y = torch.rand(n, device="cuda")
        torch.testing.assert_close(axpy(x, y), x * @SCALE@ + y)
