def test_axpy():
    torch.manual_seed(0)
    x = torch.randn(3000, device="cuda", dtype=torch.float16)
    y = torch.randn(3000, device="cuda", dtype=torch.float16)
    z = axpy(2.0, x, y)
    ref = 2.0 * x.float() + y.float()
    assert abs(z.float().sum().item() - ref.sum().item()) < 1.0
