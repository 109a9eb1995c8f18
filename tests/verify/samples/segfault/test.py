def test_segfault():
    run()
