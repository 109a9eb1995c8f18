def test_add():
    for n in (1, 63, 64, 130):
        # n == 1 adds 0 + 0: the output's one element is what the wrapper put there already.
        # The others start at 1, so a kernel that never writes element 0 fails.
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        assert add(x, y) == [x[i] + y[i] for i in range(n)], "wrong sum for n=%d" % n
