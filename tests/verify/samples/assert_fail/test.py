def test_copy():
    xs = [1, 2, 3]
    assert run_copy(xs) == xs, "Contiguous copy failed!"
