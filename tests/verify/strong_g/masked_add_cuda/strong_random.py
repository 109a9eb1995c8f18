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


def test_masked_add():
    torch.manual_seed(4)
    for n, alpha in ((1000, 0.37), (3001, -1.7), ((1 << 20) + 7, 2.25)):
        grad = torch.randn(n, device="cuda")
        p = torch.randn(n, device="cuda") * 3.0
        mask = torch.rand(n, device="cuda") < 0.4
        ref = torch.where(mask, grad.double(), grad.double() + p.double() * alpha)
        masked_add(grad, p, mask, alpha)
        _close(grad, ref, 1e-6, (n, alpha))
        # the masked elements are left exactly as they were
        assert torch.equal(grad.double()[mask], ref[mask])
