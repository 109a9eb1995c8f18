def test_gather():
    assert run([1.0, 2.0], [0, 1]) == [1.0, 2.0]
    run([1.0, 2.0], [0, 1, 2])
