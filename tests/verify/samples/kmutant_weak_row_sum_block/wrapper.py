def row_sum(x, rows, cols):
    out = [0.0] * rows
    row_sum_kernel[(rows,)](x, out, cols, cols, BLOCK_N=64)
    return out
