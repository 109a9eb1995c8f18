def test_add():
    for n in (1, 70, 130):
        assert add([1.0] * n, [2.0] * n) == [3.0] * n
