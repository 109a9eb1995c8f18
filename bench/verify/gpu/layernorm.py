import torch
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel_@ID@(X, Y, W, B, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    diff = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(diff * diff, axis=0) / N + @SCALE@ * 1e-5)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    tl.store(Y + row * stride + cols, diff * rstd * w + b, mask=mask)
# ---- kernel_wrapper ----
def layernorm(x, w, b):
    m, n = x.shape
    y = torch.empty_like(x)
    layernorm_kernel_@ID@[(m,)](x, y, w, b, x.stride(0), n, BLOCK=max(triton.next_power_of_2(n), 16))
    return y
# ---- unitest_code ----
def test_layernorm():
    for m, n in ((1, 3), (64, 1000)):
        x = torch.randn(m, n, device="cuda")
        w = torch.randn(n, device="cuda")
        b = torch.randn(n, device="cuda")
        ref = torch.nn.functional.layer_norm(x, (n,), w, b, @SCALE@ * 1e-5)
        torch.testing.assert_close(layernorm(x, w, b), ref, atol=1e-4, rtol=1e-4)
