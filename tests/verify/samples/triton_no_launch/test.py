def test_reference_only():
    x = [1.0, 2.0]
    assert [a + a for a in x] == [2.0, 4.0]
