def test_add_runs():
    out = add([1.0] * 100, [2.0] * 100)
    assert len(out) == 100
