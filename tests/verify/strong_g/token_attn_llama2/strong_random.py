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


def test_token_att_fwd():
    torch.manual_seed(20)
    # per request: its sequence's key rows through B_Loc (the last seq_len slots of its row);
    # lengths not multiples of BLOCK_N; grouped key heads
    for lens, heads, kv_heads, d, slots in (((5, 40, 77), 4, 2, 64, 300),
                                            ((1000, 333, 700, 1), 8, 8, 128, 3000)):
        batch, max_len = len(lens), max(lens)
        q = torch.randn(batch, heads, d, device="cuda")
        k = torch.randn(slots, kv_heads, d, device="cuda")
        seqlen = torch.tensor(lens, device="cuda", dtype=torch.int32)
        start = torch.zeros_like(seqlen)
        start[1:] = torch.cumsum(seqlen, 0)[:-1]
        b_loc = torch.stack([torch.randperm(slots, device="cuda")[:max_len] for _ in lens])
        b_loc = b_loc.to(torch.int32)
        total = sum(lens)
        att = torch.full((heads, total), float("nan"), device="cuda")
        token_att_fwd(q, k, att, b_loc, start, seqlen, max_len)
        scale = 1.0 / (d ** 0.5)
        ref = torch.empty(heads, total, device="cuda", dtype=torch.float64)
        at = 0
        for i, n in enumerate(lens):
            rows = k[b_loc[i, max_len - n:].long()].double()  # (n, kv_heads, d)
            for hh in range(heads):
                kh = rows[:, hh // (heads // kv_heads), :]
                ref[hh, at:at + n] = (kh @ q[i, hh].double()) * scale
            at += n
        _close(att, ref, 1e-5, (lens, heads, kv_heads, d))
