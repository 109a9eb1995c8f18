def test_assert():
    x = torch.ones(256, device='cuda', dtype=torch.int32)
    check(x)
    torch.cuda.synchronize()
