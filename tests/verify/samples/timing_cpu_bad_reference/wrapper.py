import time


def add(x, y):
    out = [0.0] * len(x)
    n = len(x)
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
    return out


def reference(x, y):
    return [a - b for a, b in zip(x, y)]  # not what the wrapper computes


def inputs():
    return [0.5 * i for i in range(130)], [1.0 - 0.25 * i for i in range(130)]


KFORGE_SPEED = {"wrapper": add, "reference": reference, "inputs": inputs}
