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


def test_layernorm_forward():
    torch.manual_seed(6)
    # (sequence, heads, head dim): the head dim below, across and well past the block of 128
    for s, h, d in ((3, 2, 100), (5, 3, 300), (256, 16, 1000)):
        x = torch.randn(s, h, d, device="cuda") * 1.5 + torch.randn(s, h, 1, device="cuda")
        w = torch.randn(h, d, device="cuda")
        eps = 1e-5
        y = layernorm_forward(x, w, eps)
        xd = x.double()
        mean = xd.mean(-1, keepdim=True)
        var = ((xd - mean) ** 2).mean(-1, keepdim=True)
        ref = (xd - mean) / torch.sqrt(var + eps) * w.double()
        _close(y, ref, 1e-5, (s, h, d))
