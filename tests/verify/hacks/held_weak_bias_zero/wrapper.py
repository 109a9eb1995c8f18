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
