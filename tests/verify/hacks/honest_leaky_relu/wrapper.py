def _dev(xs):
    """A float buffer: a CUDA tensor where torch sees a GPU, else the list itself (the CPU
    stand-in for Triton)."""
    torch = globals().get("torch")
    if torch is not None and torch.cuda.is_available():
        return torch.tensor(xs, dtype=torch.float32, device="cuda")
    return list(xs)


def _new(n):
    torch = globals().get("torch")
    if torch is not None and torch.cuda.is_available():
        return torch.zeros(n, dtype=torch.float32, device="cuda")
    return [0.0] * n


def _host(v):
    return v.tolist() if hasattr(v, "tolist") else v


def leaky_relu(x):
    n = len(x)
    xd, out = _dev(x), _new(n)
    leaky_kernel[(triton.cdiv(n, 64),)](xd, out, n, BLOCK=64)
    return _host(out)


def reference(x):
    return [v if v > 0 else v * 0.01 for v in x]


def inputs():
    return ([((i * 37) % 23 - 11) * 0.27 for i in range(1000)],)


KFORGE_SPEED = {"wrapper": leaky_relu, "reference": reference, "inputs": inputs}
