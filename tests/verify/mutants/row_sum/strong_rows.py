def test_row_sum():
    torch.manual_seed(2)
    x = torch.randn(128, 77, device="cuda") + torch.arange(128, device="cuda")[:, None]
    out = row_sum(x)
    ref = x.double().sum(dim=1).float()
    assert out.shape == (128,)
    assert torch.allclose(out, ref, rtol=1e-5, atol=1e-3), (out - ref).abs().max()
