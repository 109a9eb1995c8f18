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


def test_log_softmax():
    torch.manual_seed(12)
    # over the last dimension, over a middle one (K > 1), and one large shape
    for shape, dim in (((7, 100), -1), ((5, 33, 19), 1), ((1024, 3001), -1)):
        x = torch.randn(*shape, device="cuda") * 3.0 + 0.5
        y = log_softmax(x, dim)
        ref = torch.log_softmax(x.double(), dim=dim)
        _close(y, ref, 1e-5, (shape, dim))
