import math


def test_rms_norm():
    for n in (3, 70, 200):
        x = [((i * 29) % 13 - 6) * 0.4 + 0.05 for i in range(n)]
        ms = sum(v * v for v in x) / n
        want = [v / math.sqrt(ms + 1e-5) for v in x]
        got = rms_norm(x)
        assert len(got) == n
        for a, b in zip(got, want):
            assert math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-7), (n, a, b)
