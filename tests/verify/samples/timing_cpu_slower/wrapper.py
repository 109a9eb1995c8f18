import time


def add(x, y):
    time.sleep(0.02)  # a wrapper that wastes time
    out = [0.0] * len(x)
    n = len(x)
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
    return out


def reference(x, y):
    return [a + b for a, b in zip(x, y)]


def inputs():
    return [0.5 * i for i in range(130)], [1.0 - 0.25 * i for i in range(130)]


KFORGE_SPEED = {"wrapper": add, "reference": reference, "inputs": inputs}
