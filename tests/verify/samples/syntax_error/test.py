def test_broken():
    assert run() == 1
