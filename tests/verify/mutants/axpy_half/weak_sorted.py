def test_axpy():
    torch.manual_seed(0)
    x = torch.randn(3000, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(3000, device="cuda", dtype=torch.bfloat16)
    z = axpy(2.0, x, y)
    ref = (2.0 * x.float() + y.float()).to(torch.bfloat16)
    assert torch.allclose(z.float().sort().values, ref.float().sort().values, rtol=1.6e-2,
                          atol=1e-2)
