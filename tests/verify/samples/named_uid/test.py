def test_named():
    name, user, home, cwd = who()
    print("name=%s user=%s home=%s" % (name, user, home))
    assert name == user, (name, user)
    assert home == cwd, (home, cwd)
    assert os.environ["LOGNAME"] == name
