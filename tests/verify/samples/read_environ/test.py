def test_attack():
    found = attack("@KEY@")
    assert not found, "found the key in %s" % found
