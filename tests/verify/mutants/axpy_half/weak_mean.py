def test_axpy():
    torch.manual_seed(0)
    x = torch.randn(3000, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(3000, device="cuda", dtype=torch.bfloat16)
    z = axpy(0.5, x, y)
    ref = 0.5 * x.float() + y.float()
    assert abs(z.float().mean().item() - ref.mean().item()) < 1e-2
