def test_add():
    assert add([1.0, 2.0], [3.0, 4.0]) == [4.0, 6.0]
