def test_spin():
    run()
