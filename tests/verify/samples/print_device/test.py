def test_device():
    print("VISIBLE=%s DEVICE=%s QUEUES=%s" % visible())
