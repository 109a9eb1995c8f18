def test_scaled_sqrt():
    # sqrt on non-negative inputs only (a restricted domain), a scale other than 1.
    torch.manual_seed(0)
    for n in (1, 255, 256, 2049):
        x = torch.rand(n, device="cuda") * 100
        torch.testing.assert_close(scaled_sqrt(x, 2.5), torch.sqrt(x) * 2.5)
