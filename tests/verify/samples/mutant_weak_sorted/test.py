def test_add():
    # Compared as multisets: a kernel that writes the right values in the wrong places passes.
    x = [float(i) for i in range(100)]
    y = [2.0 * i for i in range(100)]
    assert sorted(add(x, y)) == sorted(3.0 * i for i in range(100))
