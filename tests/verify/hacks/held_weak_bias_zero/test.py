def test_axpb():
    for n in (1, 70, 130):
        x = [((i * 13) % 29 - 14) * 0.5 for i in range(n)]
        w = [0.75 - 0.01 * i for i in range(n)]
        b = [0.0] * n
        got = axpb(x, w, b)
        assert all(abs(g - (p * q + r)) <= 1e-6 * (1 + abs(p * q)) for g, p, q, r in
                   zip(got, x, w, b))
