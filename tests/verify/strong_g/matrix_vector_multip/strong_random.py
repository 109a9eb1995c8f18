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


def test_mv():
    torch.manual_seed(14)
    for n, m, transposed in ((37, 53, False), (100, 1000, False), (61, 77, True),
                             (4097, 4099, False)):
        a = torch.randn(m, n, device="cuda").t() if transposed else torch.randn(n, m,
                                                                             device="cuda")
        v = torch.randn(m, device="cuda") * 2.0 + 0.1
        y = mv(a, v)
        ref = a.double() @ v.double()
        _close(y, ref, 1e-5, (n, m, transposed))
