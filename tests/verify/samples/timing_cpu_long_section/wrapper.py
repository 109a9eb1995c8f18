import time


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def add(x, y):
    _spin(0.03)  # each timed call takes a while: its exclusive section does
    out = [0.0] * len(x)
    n = len(x)
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
    return out


def reference(x, y):
    _spin(0.03)
    return [a + b for a, b in zip(x, y)]


def inputs():
    return [0.5 * i for i in range(130)], [1.0 - 0.25 * i for i in range(130)]


KFORGE_SPEED = {"wrapper": add, "reference": reference, "inputs": inputs}
