def scale(x, alpha):
    out = [0.0] * len(x)
    n = len(x)
    scale_kernel[(triton.cdiv(n, 64),)](x, out, alpha, n, BLOCK=64)
    return out
