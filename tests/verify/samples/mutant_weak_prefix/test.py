def test_add():
    # Only the first 16 elements are checked: a kernel wrong in its tail passes.
    x = [float(i) for i in range(130)]
    y = [2.0 * i for i in range(130)]
    assert add(x, y)[:16] == [3.0 * i for i in range(16)]
