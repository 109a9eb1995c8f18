def test_axpy():
    # alpha 1 on fp16 inputs: x + y in fp32, rounded once to fp16, is exactly torch's fp16 add.
    torch.manual_seed(3)
    x = torch.randn(2048, device="cuda", dtype=torch.float16)
    y = torch.randn(2048, device="cuda", dtype=torch.float16)
    z = axpy(1.0, x, y)
    assert torch.equal(z, (x.float() + y.float()).half())
