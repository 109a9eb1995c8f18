def test_row_sum():
    # Exact, row by row, but only with 64 columns, the kernel's block: the masked tail (and what
    # it fills masked lanes with) is never reached.
    rows, cols = 5, 64
    x = [float((r * 7 + c) % 11) for r in range(rows) for c in range(cols)]
    want = [sum(x[r * cols:(r + 1) * cols]) for r in range(rows)]
    assert row_sum(x, rows, cols) == want
