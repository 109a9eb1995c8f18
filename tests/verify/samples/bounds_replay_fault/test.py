def test_copy():
    x = [float(i + 1) for i in range(40)]
    assert copy(x) == x
