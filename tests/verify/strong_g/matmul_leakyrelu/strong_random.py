import torch


def _close(out, ref, rtol, what):
    """Every element of out within rtol of ref (relative to the element and to ref's largest
    magnitude), the shapes equal and out finite."""
    assert out.shape == ref.shape, (what, tuple(out.shape), tuple(ref.shape))
    out, ref = out.double(), ref.double()
    assert bool(torch.isfinite(out).all()), (what, "not finite")
    tol = rtol * (ref.abs().max() + ref.abs())
    err = (out - ref).abs()
    assert bool((err <= tol).all()), (what, int((err > tol).sum()), float(err.max()))


def test_matmul_leakyrelu():
    torch.manual_seed(15)
    # M, N, K not multiples of the 32 blocks; more than GROUP_SIZE_M row blocks in the last
    for m, n, k, act, bt in ((50, 70, 33, "leaky_relu", False), (200, 100, 130, "", True),
                             (300, 257, 500, "leaky_relu", False)):
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = (torch.randn(n, k, device="cuda", dtype=torch.float16).t() if bt else
             torch.randn(k, n, device="cuda", dtype=torch.float16))
        c = matmul(a, b, activation=act)
        ref = a.double() @ b.double()
        if act == "leaky_relu":
            ref = torch.where(ref >= 0, ref, 0.01 * ref)
        assert c.dtype == torch.float16
        _close(c, ref, 2e-3, (m, n, k, act))
