def test_add_runs():
    x = torch.rand(4096, device="cuda")
    out = add(x, x)
    assert out.shape == x.shape
