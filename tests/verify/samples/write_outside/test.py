def test_escape():
    escape()
