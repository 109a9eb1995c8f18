def test_scale():
    for n, alpha in ((1, 2.5), (63, -0.75), (130, 3.0)):
        x = [((i * 13) % 29 - 14) * 0.5 for i in range(n)]
        got = scale(x, alpha)
        assert len(got) == n
        assert all(abs(a - b * alpha) <= 1e-5 * (1 + abs(b * alpha)) for a, b in zip(got, x))
