def test_run():
    assert run() == 1
