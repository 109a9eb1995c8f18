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


def test_rotary_emb_fwd():
    torch.manual_seed(18)
    # lengths not multiples of BLOCK_SEQ, query heads not multiples of BLOCK_HEAD, fewer key
    # heads than query heads
    for total, hq, hk, d in ((37, 6, 2, 64), (5, 3, 3, 32), (1000, 12, 4, 128)):
        q = torch.randn(total, hq, d, device="cuda")
        k = torch.randn(total, hk, d, device="cuda") * 2.0
        angle = torch.rand(total, d, device="cuda", dtype=torch.float64) * 6.0 - 3.0
        cos, sin = angle.cos().float(), angle.sin().float()
        refs = []
        for t in (q, k):
            td = t.double()
            t0, t1 = td[..., 0::2], td[..., 1::2]
            c0, c1 = cos.double()[:, None, 0::2], cos.double()[:, None, 1::2]
            s0, s1 = sin.double()[:, None, 0::2], sin.double()[:, None, 1::2]
            r = torch.empty_like(td)
            r[..., 0::2] = t0 * c0 - t1 * s0
            r[..., 1::2] = t0 * s1 + t1 * c1
            refs.append(r)
        rotary_emb_fwd(q, k, cos, sin)
        _close(q, refs[0], 1e-5, ("q", total, hq, d))
        _close(k, refs[1], 1e-5, ("k", total, hk, d))
