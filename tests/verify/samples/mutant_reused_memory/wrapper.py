# A caching allocator, as torch's is on a GPU: a freed buffer is handed out again as it is, the
# values left in it included.
_free = []


def alloc(n):
    for i, b in enumerate(_free):
        if len(b) == n:
            return _free.pop(i)
    return [0.0] * n


def release(b):
    _free.append(b)


def add(x, y):
    out = alloc(len(x))
    n = len(x)
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK_SIZE=64)
    return out
