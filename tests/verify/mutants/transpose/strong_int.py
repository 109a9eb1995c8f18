def test_transpose():
    torch.manual_seed(0)
    x = torch.randint(-10**6, 10**6, (33, 65), device="cuda", dtype=torch.int32)
    z = transpose(x)
    assert z.dtype == torch.int32 and z.shape == (65, 33)
    assert torch.equal(z, x.t())
