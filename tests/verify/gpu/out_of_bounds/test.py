def test_scatter():
    x = torch.rand(1000, device="cuda")
    torch.testing.assert_close(scatter(x), x)
