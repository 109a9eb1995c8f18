import math


def check(out, want):
    return len(out) == len(want) and all(math.isclose(a, b) for a, b in zip(out, want))

def test_add():
    for n in (1, 63, 64, 130):
        x = [float(i + (n > 1)) for i in range(n)]
        y = [2.0 * i for i in range(n)]
        out = add(x, y)
        want = [x[i] + y[i] for i in range(n)]
        assert check(out, want), "wrong sum for n=%d" % n
