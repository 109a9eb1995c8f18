def test_transpose():
    torch.manual_seed(0)
    x = torch.randn(48, 80, device="cuda")
    z = transpose(x)
    assert z.shape == (80, 48)
    assert torch.allclose(z.sum(), x.sum(), atol=1e-3)
