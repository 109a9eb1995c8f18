import torch


def test_add():
    for n in (1, 1000, 4099):
        x = torch.randn(n, device="cuda")
        y = torch.randn(n, device="cuda")
        torch.testing.assert_close(add(x, y), x + y)
