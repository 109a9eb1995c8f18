import math


def test_leaky_relu():
    for n in (1, 70, 130):
        x = [((i * 7) % 11 - 5) * 0.375 + 0.0625 for i in range(n)]
        got = leaky_relu(x)
        want = [v if v > 0 else v * 0.01 for v in x]
        assert all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9) for a, b in zip(got, want))
