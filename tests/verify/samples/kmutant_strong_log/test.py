import math


def test_log():
    # log is defined on positive inputs only: a test of it is right to use them. Every element
    # compared, sizes below, at and above the block.
    for n in (1, 64, 70, 130):
        x = [0.5 + 0.37 * i for i in range(n)]
        got = log(x)
        assert all(abs(g - math.log(v)) <= 1e-12 for g, v in zip(got, x)), "n=%d" % n
