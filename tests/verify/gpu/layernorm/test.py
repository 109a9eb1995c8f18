def test_layernorm():
    torch.manual_seed(0)
    for m, n in ((1, 1), (8, 100), (64, 1024), (3, 4097)):
        x = torch.randn(m, n, device="cuda")
        w = torch.randn(n, device="cuda")
        b = torch.randn(n, device="cuda")
        ref = torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5)
        torch.testing.assert_close(layernorm(x, w, b), ref, atol=1e-4, rtol=1e-4)
