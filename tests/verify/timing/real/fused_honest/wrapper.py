def scale_shift_relu(x, a, b):
    out = torch.empty_like(x)
    n = x.numel()
    scale_shift_relu_kernel[(triton.cdiv(n, 1024),)](x, out, a, b, n, BLOCK=1024)
    return out


def reference(x, a, b):
    # Three kernels and three round trips through memory where one suffices.
    return torch.relu(x * a + b)


def inputs():
    return torch.randn(1 << 24, device="cuda"), 1.5, -0.25


KFORGE_SPEED = {"wrapper": scale_shift_relu, "reference": reference, "inputs": inputs}
