import math


def test_logsumexp():
    for n in (1, 33, 150):
        x = [((i * 41) % 17 - 8) * 0.35 for i in range(n)]
        m = max(x)
        want = m + math.log(sum(math.exp(v - m) for v in x))
        got = logsumexp(x)
        assert len(got) == 1 and math.isclose(got[0], want, rel_tol=1e-5, abs_tol=1e-6), (n, got)
