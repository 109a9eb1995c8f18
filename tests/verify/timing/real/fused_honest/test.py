import torch


def test_scale_shift_relu():
    for n in (1, 1000, 4099):
        x = torch.randn(n, device="cuda")
        torch.testing.assert_close(scale_shift_relu(x, 1.5, -0.25), torch.relu(x * 1.5 - 0.25))
