import time


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _library_matmul(x):
    # The stand-in for a GEMM done by PyTorch/cuBLAS: the heavy work, outside the sample's kernels.
    _spin(0.005)
    return list(x)


def add(x, y):
    # A token kernel: it does the epilogue (the add), the library does the rest.
    x = _library_matmul(x)
    out = [0.0] * len(x)
    n = len(x)
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
    return out


def reference(x, y):
    _spin(0.02)  # a slow reference: the speedup alone would pass
    return [a + b for a, b in zip(x, y)]


def inputs():
    return [0.5 * i for i in range(130)], [1.0 - 0.25 * i for i in range(130)]


KFORGE_SPEED = {"wrapper": add, "reference": reference, "inputs": inputs}
