def test_transpose():
    torch.manual_seed(0)
    x = torch.randn(48, 80, device="cuda")
    z = transpose(x)
    assert torch.equal(z.flatten()[:16], x.t().flatten()[:16])
