def test_transpose():
    torch.manual_seed(0)
    x = torch.randn(64, 64, device="cuda")
    z = transpose(x)
    assert torch.equal(torch.diagonal(z), torch.diagonal(x))
