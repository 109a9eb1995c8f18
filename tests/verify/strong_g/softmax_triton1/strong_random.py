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


def test_softmax():
    torch.manual_seed(10)
    for rows, cols in ((7, 100), (64, 1000), (3, 3001), (2048, 4097)):
        x = torch.randn(rows, cols, device="cuda") * 3.0 + 1.0
        y = softmax(x)
        ref = torch.softmax(x.double(), dim=-1)
        _close(y, ref, 1e-5, (rows, cols))
