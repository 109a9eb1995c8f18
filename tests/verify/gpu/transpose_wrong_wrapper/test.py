def test_copy():
    x = torch.randn(64, 64, device="cuda")
    z = copy(x)
    assert torch.equal(z, x), "Contiguous copy failed!"
