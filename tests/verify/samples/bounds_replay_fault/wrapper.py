def copy(x):
    out = [0.0] * len(x)
    n = len(x)
    copy_kernel[(triton.cdiv(n, 64),)](x, out, n, BLOCK_SIZE=64)
    return out
