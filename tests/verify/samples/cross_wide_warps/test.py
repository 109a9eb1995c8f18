def test_add():
    for n in (1, 63, 64, 130):
        x = [float(i) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        assert add(x, y) == [3.0 * i for i in range(n)], "wrong sum for n=%d" % n
