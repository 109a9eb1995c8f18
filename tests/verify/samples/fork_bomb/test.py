def test_bomb():
    bomb()
