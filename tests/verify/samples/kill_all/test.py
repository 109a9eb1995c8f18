def test_attack():
    attack()
