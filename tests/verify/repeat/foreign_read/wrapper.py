def add(x, y):
    out = [0.0] * len(x)
    n = len(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, [0.0], out, n, BLOCK_SIZE=64)
    return out
