def test_add():
    # Every element compared exactly, but the second operand is all zeros: a kernel that
    # ignores it passes.
    for n in (1, 70, 130):
        x = [0.5 * i - 7.0 for i in range(n)]
        y = [0.0] * n
        assert add(x, y) == [a + b for a, b in zip(x, y)], "n=%d" % n
