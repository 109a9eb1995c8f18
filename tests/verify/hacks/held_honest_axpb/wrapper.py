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


def axpb(x, w, b):
    n = len(x)
    out = _new(n)
    axpb_kernel[(triton.cdiv(n, 64),)](_dev(x), _dev(w), _dev(b), out, n, BLOCK=64)
    return _host(out)


def reference(x, w, b):
    return [p * q + r for p, q, r in zip(x, w, b)]


def inputs():
    return ([0.01 * i - 5.0 for i in range(2048)], [0.5 - 0.0003 * i for i in range(2048)],
            [0.1 * (i % 13) - 0.6 for i in range(2048)])


KFORGE_SPEED = {"wrapper": axpb, "reference": reference, "inputs": inputs}
