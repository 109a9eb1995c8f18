def test_hog():
    hog()
