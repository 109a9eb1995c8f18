def test_add():
    # The golden result is the wrapper itself: any deterministic kernel passes.
    x = [float(i) for i in range(100)]
    y = [2.0 * i for i in range(100)]
    assert add(x, y) == add(x, y)
