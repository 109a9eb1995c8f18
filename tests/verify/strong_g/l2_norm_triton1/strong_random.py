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


def test_l2_norm_fwd():
    torch.manual_seed(7)
    for shape in ((3, 50), (17, 1000), (2, 5, 129), (4096, 2049)):
        x = torch.randn(*shape, device="cuda") * 2.0 - 0.2
        eps = 1e-6
        y = _l2_norm_fwd(x, eps)
        xd = x.double()
        ref = xd / torch.sqrt((xd * xd).sum(-1, keepdim=True) + eps)
        _close(y, ref, 1e-5, shape)
