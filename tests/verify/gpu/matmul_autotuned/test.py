def test_matmul():
    torch.manual_seed(0)
    for m, n, k in ((512, 512, 512), (257, 129, 65), (1, 64, 32)):
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        torch.testing.assert_close(matmul(a, b), torch.matmul(a, b), atol=1e-2, rtol=1e-2)
