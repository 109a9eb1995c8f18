def test_device():
    print("VISIBLE=%s DEVICE=%s" % visible())
