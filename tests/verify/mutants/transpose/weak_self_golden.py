def test_transpose():
    torch.manual_seed(0)
    x = torch.randn(48, 80, device="cuda")
    assert torch.equal(transpose(x), transpose(x))
