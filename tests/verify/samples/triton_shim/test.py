def test_add_close():
    triton.testing.assert_almost_equal(add([1.0, 2.0], [0.5, 0.25]), [1.5, 2.25], decimal=5)
