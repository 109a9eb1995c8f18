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


def test_rope_embedding_forward():
    torch.manual_seed(17)
    # heads not a multiple of the group of 4, half head dims not powers of two, cos/sin
    # tables longer than the sequence
    for b, h, s, d, table in ((2, 5, 7, 64, 7), (1, 3, 33, 80, 40), (4, 16, 513, 128, 513)):
        q = torch.randn(b, h, s, d, device="cuda")
        angle = torch.rand(table, d // 2, device="cuda", dtype=torch.float64) * 6.0 - 3.0
        cos, sin = angle.cos().float(), angle.sin().float()
        out = _rope_embedding_forward_impl(q, cos, sin)[0]
        half = d // 2
        qd = q.double()
        q1, q2 = qd[..., :half], qd[..., half:]
        c, sn = cos.double()[:s], sin.double()[:s]
        ref = torch.cat((q1 * c - q2 * sn, q2 * c + q1 * sn), dim=-1)
        _close(out, ref, 1e-5, (b, h, s, d))
