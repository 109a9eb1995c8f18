import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 512}), triton.Config({"BLOCK": 1024})],
    key=["n"],
    reset_to_zero=["out_ptr"],
)
@triton.jit
def sum_kernel_@ID@(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0) * @SCALE@)
# ---- kernel_wrapper ----
def total(x):
    out = torch.zeros((1,), device=x.device, dtype=torch.float32)
    n = x.numel()
    sum_kernel_@ID@[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out
# ---- unitest_code ----
def test_total():
    for n in (1, 5000, 100000):
        x = torch.rand(n, device="cuda")
        torch.testing.assert_close(total(x), (x.sum() * @SCALE@).reshape(1), atol=1e-2, rtol=1e-4)
