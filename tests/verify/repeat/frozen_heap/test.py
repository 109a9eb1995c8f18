def test_copy():
    # What a full collection in this process walks besides its own objects: none of the
    # worker's, which it froze before it forked (worker.freeze_heap).
    print("frozen objects: %d" % gc.get_freeze_count())
    assert copy([1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]
