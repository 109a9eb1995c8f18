def test_transpose():
    # Every element equal: the output is constant, so a copy, a wrong stride or a dropped
    # element all pass (the verifier flags constant_output).
    x = torch.full((33, 65), 7, device="cuda", dtype=torch.int32)
    z = transpose(x)
    assert torch.equal(z, x.t())
