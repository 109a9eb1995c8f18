import builtins as _builtins

# Counts who reads the kernel's parameter names, and whether before the launch wrote its output
# (it starts as 0.5, a value the kernel never writes): the verifier reads them before a launch
# to poison what the launch should write (a skipped launch, a kernel mutant's confirmation).
_READS = _builtins.__dict__.setdefault("_ctrl_early_reads", [0])
_OUT = [None]


class _Names(list):
    def __iter__(self):
        out = _OUT[0]
        if out is not None and len(out) and out[0] == 0.5:
            _READS[0] += 1
        return super().__iter__()


add_kernel.arg_names = _Names(add_kernel.arg_names)


def add(x, y):
    """x + y for lists of floats: on CUDA tensors where torch sees a GPU, else (the CPU stand-in
    for Triton) on the lists themselves."""
    n = len(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    torch = globals().get("torch")
    if torch is not None and torch.cuda.is_available():
        xt = torch.tensor(x, dtype=torch.float32, device="cuda")
        yt = torch.tensor(y, dtype=torch.float32, device="cuda")
        out = torch.zeros_like(xt)
        add_kernel[grid](xt, yt, out, n, BLOCK_SIZE=64)
        return out.tolist()
    out = [0.5] * n
    _OUT[0] = out
    try:
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=64)
    finally:
        _OUT[0] = None
    return out
