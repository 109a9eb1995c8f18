def test_axpy():
    torch.manual_seed(0)
    x = torch.randn(3000, device="cuda", dtype=torch.float16)
    y = torch.randn(3000, device="cuda", dtype=torch.float16)
    z = axpy(2.0, x, y)
    assert torch.allclose(z.float(), 2.0 * x.float() + y.float(), rtol=0.5, atol=1e-2)
