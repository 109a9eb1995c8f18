def test_add_runs():
    out = add([float(i) for i in range(100)], [2.0] * 100)
    assert len(out) == 100
