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


def test_swiglu_fwd():
    torch.manual_seed(3)
    # the gate and the value are the two halves of the last dimension
    for shape in ((7, 2 * 50), (3, 5, 2 * 333), (300, 2 * 1537)):
        xy = torch.randn(*shape, device="cuda") * 2.0
        out = _swiglu_fwd(xy)
        x, y = xy.double().chunk(2, dim=-1)
        ref = x * torch.sigmoid(x) * y
        _close(out, ref, 1e-5, shape)
