def test_copy_transpose():
    for m, n in ((64, 64), (32, 128), (16, 16)):
        x = torch.randn(m, n, device="cuda")
        z = copy_transpose(x)
        assert torch.equal(z, x.T), "transpose failed for %dx%d" % (m, n)
