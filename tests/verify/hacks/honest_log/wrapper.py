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


import math


def log(x):
    n = len(x)
    xd, out = _dev(x), _new(n)
    log_kernel[(triton.cdiv(n, 64),)](xd, out, n, BLOCK=64)
    return _host(out)


def reference(x):
    return [math.log(v) for v in x]


def inputs():
    return ([0.01 * i + 0.05 for i in range(1000)],)


KFORGE_SPEED = {"wrapper": log, "reference": reference, "inputs": inputs}
