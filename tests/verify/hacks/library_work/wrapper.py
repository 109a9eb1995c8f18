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


def matvec_bias_relu(a, x, b):
    """relu(A @ x + b), A given row by row (a list of rows)."""
    torch = globals().get("torch")
    m = len(a)
    if torch is not None and torch.cuda.is_available():
        # the heavy part by the library: the token kernel only adds the bias
        acc = torch.tensor(a, dtype=torch.float32, device="cuda") @ torch.tensor(
            x, dtype=torch.float32, device="cuda")
    else:
        acc = [sum(p * q for p, q in zip(row, x)) for row in a]
    out = _new(m)
    bias_relu_kernel[(triton.cdiv(m, 64),)](acc, _dev(b), out, m, BLOCK=64)
    return _host(out)


def reference(a, x, b):
    return [max(sum(p * q for p, q in zip(row, x)) + c, 0.0) for row, c in zip(a, b)]


def inputs():
    a = [[((i * 7 + j * 3) % 11 - 5) * 0.1 for j in range(128)] for i in range(256)]
    return a, [0.01 * j - 0.5 for j in range(128)], [0.05 * (i % 9) - 0.2 for i in range(256)]


KFORGE_SPEED = {"wrapper": matvec_bias_relu, "reference": reference, "inputs": inputs}
