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


def test_sin():
    torch.manual_seed(1)
    # sizes around the block of 1024 (a tail in every launch) and one large shape
    for n in (1000, 4097, (1 << 20) + 5):
        x = torch.randn(n, device="cuda") * 2.5
        y = call_kernel(x)
        assert y.dtype == torch.float32
        _close(y, torch.sin(x.double()), 1e-5, n)
    x = torch.randn(37, 53, device="cuda") * 2.5 - 0.5
    _close(call_kernel(x), torch.sin(x.double()), 1e-5, "2-D")
