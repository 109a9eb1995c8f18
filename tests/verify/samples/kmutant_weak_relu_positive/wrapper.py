def relu(x):
    out = [0.0] * len(x)
    n = len(x)
    relu_kernel[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
    return out
