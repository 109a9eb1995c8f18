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


def test_mean_dim():
    torch.manual_seed(8)
    # rows and columns not multiples of the 8x8 block, reductions over inner, middle, two and
    # the outer dimension
    cases = (((37, 53), [1], False), ((6, 29, 11), [1], True), ((13, 7, 45), [0, 2], False),
             ((3000, 1001), [0], False))
    for shape, dim, keepdim in cases:
        x = torch.randn(*shape, device="cuda") * 2.0 + 0.5
        y = mean_dim(x, dim, keepdim)
        ref = x.double().mean(dim=dim, keepdim=keepdim)
        _close(y, ref, 1e-5, (shape, dim, keepdim))
