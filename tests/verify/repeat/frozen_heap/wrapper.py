def copy(x):
    out = [0.0] * len(x)
    copy_kernel[(triton.cdiv(len(x), 16),)](x, out, len(x), BLOCK=16)
    return out
