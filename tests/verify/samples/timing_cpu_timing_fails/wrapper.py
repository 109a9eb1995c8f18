CALLS = [0]


def add(x, y):
    # Runs for the test (3 calls) and the reference check (1 call), then fails the way a wrapper
    # at real sizes runs out of device memory in the timing's copies.
    CALLS[0] += 1
    if CALLS[0] > 4:
        raise RuntimeError("CUDA out of memory. Tried to allocate 256.00 MiB (the stand-in)")
    out = [0.0] * len(x)
    n = len(x)
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
    return out


def reference(x, y):
    return [a + b for a, b in zip(x, y)]


def inputs():
    return [0.5 * i for i in range(130)], [1.0 - 0.25 * i for i in range(130)]


KFORGE_SPEED = {"wrapper": add, "reference": reference, "inputs": inputs}
