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


def test_token_softmax_fwd():
    torch.manual_seed(11)
    # sequences of different lengths packed one after another, per head
    for heads, lens in ((3, (5, 37, 100, 2)), (8, (513, 1000, 77))):
        seqlen = torch.tensor(lens, device="cuda", dtype=torch.int32)
        start = torch.zeros_like(seqlen)
        start[1:] = torch.cumsum(seqlen, 0)[:-1]
        total = sum(lens)
        logics = torch.randn(heads, total, device="cuda") * 3.0
        prob = torch.full((heads, total), float("nan"), device="cuda")
        token_softmax_fwd(logics, start, seqlen, prob, int(seqlen.max()))
        ref = torch.empty(heads, total, device="cuda", dtype=torch.float64)
        b = 0
        for n in lens:
            ref[:, b:b + n] = torch.softmax(logics[:, b:b + n].double(), dim=-1)
            b += n
        _close(prob, ref, 1e-5, (heads, lens))
