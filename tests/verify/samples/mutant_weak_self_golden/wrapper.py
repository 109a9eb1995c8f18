def add(x, y):
    out = [float("nan") for _ in x]  # uninitialised memory, as torch.empty gives
    n = len(x)
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK_SIZE=64)
    return out
