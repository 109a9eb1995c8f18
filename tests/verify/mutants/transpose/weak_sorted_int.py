def test_transpose():
    torch.manual_seed(0)
    x = torch.randint(-1000, 1000, (33, 65), device="cuda", dtype=torch.int32)
    z = transpose(x)
    assert torch.equal(torch.sort(z.flatten()).values, torch.sort(x.flatten()).values)
