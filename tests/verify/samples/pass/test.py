def test_add():
    assert run_add(2, 3) == 5

def test_add_negative():
    assert run_add(-2, -3) == -5
