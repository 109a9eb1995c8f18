def test_fill():
    fill()
