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


def test_reversed_cumsum_scalar():
    torch.manual_seed(16)
    # T not a multiple of the chunk BT, chunks of several steps, one large shape
    for shape in ((2, 3, 100), (1, 5, 37), (8, 16, 4099)):
        s = torch.randn(*shape, device="cuda") + 0.1
        z = chunk_global_reversed_cumsum_scalar(s)
        ref = s.double().flip(-1).cumsum(-1).flip(-1)
        _close(z, ref, 1e-5, shape)
