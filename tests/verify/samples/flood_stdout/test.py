def test_flood():
    flood(24)
    assert True
