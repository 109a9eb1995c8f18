def test_phone_home():
    phone_home(@PORT@)
