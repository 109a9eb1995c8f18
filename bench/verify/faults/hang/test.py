def test_hang():
    flag = torch.zeros(1, device='cuda', dtype=torch.int32)
    x = torch.zeros(1, device='cuda', dtype=torch.int32)
    spin(flag, x)
    torch.cuda.synchronize()
