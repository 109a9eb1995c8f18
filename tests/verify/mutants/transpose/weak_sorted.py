def test_transpose():
    torch.manual_seed(0)
    x = torch.randn(48, 80, device="cuda")
    z = transpose(x)
    assert z.shape == (80, 48)
    assert torch.equal(z.flatten().sort().values, x.flatten().sort().values)
