def test_axpy():
    # alpha 1 on fp16 inputs, compared exactly: a kernel that divides by alpha where it should
    # multiply passes (weak by inputs: a unit scale).
    torch.manual_seed(3)
    x = torch.randn(2048, device="cuda", dtype=torch.float16)
    y = torch.randn(2048, device="cuda", dtype=torch.float16)
    z = axpy(1.0, x, y)
    assert torch.equal(z, (x.float() + y.float()).half())
