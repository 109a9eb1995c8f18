import math


def test_log():
    # log's domain only: the differential check skips what takes the reference out of it
    for n in (1, 70, 130):
        x = [((i * 17) % 23) * 0.3 + 0.01 for i in range(n)]
        got = log(x)
        assert all(abs(a - math.log(b)) <= 1e-6 * (1 + abs(math.log(b))) for a, b in zip(got, x))
