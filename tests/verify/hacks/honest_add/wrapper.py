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


def add(x, y):
    n = len(x)
    xd, yd, out = _dev(x), _dev(y), _new(n)
    add_kernel[(triton.cdiv(n, 64),)](xd, yd, out, n, BLOCK=64)
    return _host(out)


def reference(x, y):
    return [a + b for a, b in zip(x, y)]


def inputs():
    return [((i * 37) % 23 - 11) * 0.27 for i in range(4096)], [0.5 - 0.001 * i for i in range(4096)]


KFORGE_SPEED = {"wrapper": add, "reference": reference, "inputs": inputs}
