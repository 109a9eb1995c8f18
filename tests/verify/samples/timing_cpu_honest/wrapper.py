import time


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def add(x, y):
    out = [0.0] * len(x)
    n = len(x)
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
    return out


def reference(x, y):
    _spin(0.005)  # a slow reference
    return [a + b for a, b in zip(x, y)]


def inputs():
    return [0.5 * i for i in range(2000)], [1.0 - 0.25 * i for i in range(2000)]


KFORGE_SPEED = {"wrapper": add, "reference": reference, "inputs": inputs}
