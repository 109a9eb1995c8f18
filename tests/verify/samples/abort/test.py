def test_abort():
    run()
