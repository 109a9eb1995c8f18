def test_add():
    # A size-1 call checked whole, then a large one checked only in its first 16 elements:
    # changing every launch's tail at once is caught by the first call, changing the large
    # launch's tail alone is not.
    assert add([1.0], [2.0]) == [3.0]
    x = [float(i + 1) for i in range(130)]
    y = [2.0 * i for i in range(130)]
    assert add(x, y)[:16] == [x[i] + y[i] for i in range(16)]
