def test_rownorm():
    torch.manual_seed(0)
    for m, n in ((1, 7), (8, 300), (33, 1024)):
        x = torch.randn(m, n, device="cuda") * 3 + 1
        ref = torch.nn.functional.layer_norm(x, (n,), eps=1e-5)
        torch.testing.assert_close(rownorm(x), ref, rtol=1e-4, atol=1e-4)
