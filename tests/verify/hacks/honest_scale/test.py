def test_scale():
    for n in (1, 70, 130):
        x = [((i * 13) % 29 - 14) * 0.5 for i in range(n)]
        for alpha in (1.5, -0.75):
            got = scale(x, alpha)
            assert all(abs(a - b * alpha) <= 1e-6 * (1 + abs(b * alpha)) for a, b in zip(got, x))
