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


def test_quantize_global_transpose():
    torch.manual_seed(2)
    # M and N not multiples of the 128-square block, one shape of several blocks each way
    for m, n in ((100, 37), (257, 130), (1500, 1031)):
        x = torch.randn(m, n, device="cuda") * 3.0 + 0.25
        out, absmax = quantize_global_transpose(x)
        assert out.dtype == torch.int8 and out.shape == (n, m)
        ref_absmax = x.abs().max()
        assert torch.equal(absmax, ref_absmax.unsqueeze(0))
        inv = 1.0 / ref_absmax.unsqueeze(0)
        ref = torch.round(127.0 * (x * inv)).to(torch.int8).t()
        assert torch.equal(out, ref), (m, n, int((out != ref).sum()))
