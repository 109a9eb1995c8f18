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


def test_max_dim():
    torch.manual_seed(9)
    # rows not multiples of BLOCK_M, reduced lengths not powers of two, an inner dimension K
    cases = (((37, 53), 1), ((5, 19, 23), 1), ((1000, 129), 0), ((2000, 1500), -1))
    for shape, dim in cases:
        x = torch.randn(*shape, device="cuda") * 3.0
        out = max_dim(x, dim=dim)
        ref = torch.max(x, dim=dim)
        assert torch.equal(out.values, ref.values), (shape, dim)
        assert out.indices.dtype == torch.int64
        assert torch.equal(out.indices, ref.indices), (shape, dim)
    x = torch.randn(9, 31, 5, device="cuda")
    out = max_dim(x, dim=2, keepdim=True)
    ref = torch.max(x, dim=2, keepdim=True)
    assert torch.equal(out.values, ref.values) and torch.equal(out.indices, ref.indices)
