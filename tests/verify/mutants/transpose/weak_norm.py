def test_transpose():
    torch.manual_seed(0)
    x = torch.randn(48, 80, device="cuda")
    z = transpose(x)
    assert torch.allclose(torch.linalg.norm(z), torch.linalg.norm(x))
