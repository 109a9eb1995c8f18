def test_attack():
    killed = attack()
    assert not killed, "killed: %s" % killed
