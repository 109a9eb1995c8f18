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


def test_logsumexp_fwd():
    torch.manual_seed(13)
    for shape, scale in (((7, 100), None), ((3, 4, 1000), 0.7), ((4096, 3000), 1.3)):
        x = torch.randn(*shape, device="cuda") * 2.0 + 0.5
        z = logsumexp_fwd(x, scale=scale)
        xd = x.double() * (1.0 if scale is None else scale)
        ref = torch.logsumexp(xd, dim=-1)
        _close(z, ref, 1e-5, (shape, scale))
