def test_attack():
    attached = attack()
    assert not attached, "attached to %s" % attached
