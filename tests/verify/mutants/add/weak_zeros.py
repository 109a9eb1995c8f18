def test_add():
    # All zeros in, all zeros out: a constant output.
    for n in (255, 4097):
        x = torch.zeros(n, device="cuda")
        assert torch.equal(add(x, x), x)
