def add(x, y):
    out = [0.0] * len(x)
    n = len(x)
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK_SIZE=64)
    return out
