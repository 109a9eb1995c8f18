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


def test_rms_norm():
    torch.manual_seed(5)
    for shape in ((5, 100), (33, 1000), (4, 7, 513), (2048, 4097)):
        n = shape[-1]
        x = torch.randn(*shape, device="cuda") * 2.0 + 0.3
        w = torch.randn(n, device="cuda")
        eps = 1e-5
        y = rms_norm(x, (n,), w, eps)
        xd = x.double()
        ref = xd / torch.sqrt((xd * xd).mean(-1, keepdim=True) + eps) * w.double()
        _close(y, ref, 1e-5, shape)
