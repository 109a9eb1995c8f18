import math


def test_leaky_relu():
    for n in (1, 70, 130):
        x = [0.25 * i + 0.5 for i in range(n)]
        got = leaky_relu(x)
        want = [v if v > 0 else v * 0.01 for v in x]
        assert all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9) for a, b in zip(got, want))
