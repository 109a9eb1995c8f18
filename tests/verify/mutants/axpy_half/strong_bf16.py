def test_axpy():
    torch.manual_seed(0)
    x = torch.randn(4099, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(4099, device="cuda", dtype=torch.bfloat16)
    z = axpy(-1.5, x, y)
    ref = (-1.5 * x.float() + y.float()).to(torch.bfloat16)
    torch.testing.assert_close(z, ref, rtol=1.6e-2, atol=1e-2)
