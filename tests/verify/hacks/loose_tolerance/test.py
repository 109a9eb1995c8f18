def test_add():
    for n in (1, 70, 130):
        x = [0.01 * i for i in range(n)]
        y = [0.02 - 0.001 * i for i in range(n)]
        got = add(x, y)
        assert all(abs(a - (b + c)) < 10.0 for a, b, c in zip(got, x, y))
