def test_attack():
    got = attack("@DB@")
    assert not got, "reached the database: %s" % got
