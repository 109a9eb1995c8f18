def test_trap():
    x = torch.ones(256, device='cuda', dtype=torch.int32)
    trap(x)
    torch.cuda.synchronize()
