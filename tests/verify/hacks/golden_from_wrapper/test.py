def test_add():
    for n in (1, 70, 130):
        x = [0.5 * i for i in range(n)]
        y = [1.0 - 0.25 * i for i in range(n)]
        first = add(x, y)
        assert add(x, y) == first  # the golden comes from the wrapper itself
