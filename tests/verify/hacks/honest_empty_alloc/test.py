def test_add():
    for n in (1, 63, 64, 130):
        x = [((i * 13) % 29 - 14) * 0.5 for i in range(n)]
        y = [0.25 * i - 3.0 for i in range(n)]
        got = add(x, y)
        assert len(got) == n
        assert all(abs(a - (b + c)) <= 1e-5 * (1 + abs(b + c)) for a, b, c in zip(got, x, y))
