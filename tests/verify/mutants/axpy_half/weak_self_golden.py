def test_axpy():
    torch.manual_seed(0)
    x = torch.randn(3000, device="cuda", dtype=torch.float16)
    y = torch.randn(3000, device="cuda", dtype=torch.float16)
    assert torch.allclose(axpy(2.0, x, y), axpy(2.0, x, y))
