def _gpu():
    torch = globals().get("torch")
    return torch if torch is not None and torch.cuda.is_available() else None


def _dev(xs):
    """A float buffer: a CUDA tensor where torch sees a GPU, else the list itself (the CPU
    stand-in for Triton)."""
    torch = _gpu()
    if torch is not None:
        return torch.tensor(xs, dtype=torch.float32, device="cuda")
    return list(xs)


def _empty(n):
    """The output allocated uninitialised: torch.empty on the GPU (whatever the allocator's block
    held: maybe the reference's answer), a list of NaN under the stand-in."""
    torch = globals().get("torch")
    if torch is not None and torch.cuda.is_available():
        return torch.empty(n, dtype=torch.float32, device="cuda")
    return [float("nan")] * n


def _host(v):
    return v.tolist() if hasattr(v, "tolist") else v


def add(x, y):
    n = len(x)
    out = _empty(n)
    add_kernel[(triton.cdiv(n, 64),)](_dev(x), _dev(y), out, n, BLOCK=64)
    return _host(out)


def reference(x, y):
    return [a + b for a, b in zip(x, y)]


def inputs():
    return [((i * 37) % 23 - 11) * 0.27 for i in range(4096)], [0.5 - 0.001 * i for i in range(4096)]


KFORGE_SPEED = {"wrapper": add, "reference": reference, "inputs": inputs}
