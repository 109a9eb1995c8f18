import math


def test_abs():
    for n in (1, 70, 130):
        x = [0.25 * i + 0.5 for i in range(n)]
        got = absolute(x)
        assert all(math.isclose(a, abs(b), rel_tol=1e-6) for a, b in zip(got, x))
