def test_add():
    for n in (1, 64, 100):
        x = [0.25 * i - 3.0 for i in range(n)]
        y = [1.5 - 0.125 * i for i in range(n)]
        got = add(x, y)
        assert got == [a + b for a, b in zip(x, y)]
