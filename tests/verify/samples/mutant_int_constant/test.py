def test_add():
    # Exact, on integers that are all equal: reordering them or scaling 7 by 5% (rounded back to
    # an integer) changes nothing, so those mutants do not apply; the others must be caught.
    out = add([3] * 100, [4] * 100)
    assert out == [7] * 100
