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


def test_embedding():
    torch.manual_seed(19)
    # ids inside and outside this shard's vocabulary [start, end) (outside: zeros), a hidden
    # size that is not a power of two
    for n_ctx, hidden, start, rows in ((37, 100, 200, 300), (1000, 257, 0, 700),
                                       (4099, 1000, 1000, 3000)):
        weight = torch.randn(rows, hidden, device="cuda")
        ids = torch.randint(0, start + rows + 250, (n_ctx,), device="cuda", dtype=torch.int64)
        out = torch.full((n_ctx, hidden), float("nan"), device="cuda")
        embedding(ids, weight, start, start + rows, out)
        inside = (ids >= start) & (ids < start + rows)
        ref = torch.zeros(n_ctx, hidden, device="cuda")
        ref[inside] = weight[ids[inside] - start]
        assert torch.equal(out, ref), (n_ctx, hidden, int((out != ref).sum()))
