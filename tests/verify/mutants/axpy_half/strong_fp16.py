def test_axpy():
    torch.manual_seed(0)
    for n in (1, 511, 512, 3000):
        x = torch.randn(n, device="cuda", dtype=torch.float16)
        y = torch.randn(n, device="cuda", dtype=torch.float16)
        z = axpy(2.0, x, y)
        assert z.dtype == torch.float16
        ref = 2.0 * x.float() + y.float()
        assert torch.allclose(z.float(), ref, rtol=1e-2, atol=1e-2), n
