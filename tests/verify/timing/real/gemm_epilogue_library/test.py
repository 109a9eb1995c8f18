import torch


def test_linear_relu():
    for m, k, n in ((16, 32, 48), (128, 64, 256)):
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        w = torch.randn(k, n, device="cuda", dtype=torch.float16) / 8
        b = torch.randn(n, device="cuda", dtype=torch.float16)
        torch.testing.assert_close(linear_relu(a, w, b), torch.relu(a @ w + b), atol=2e-2, rtol=2e-2)
